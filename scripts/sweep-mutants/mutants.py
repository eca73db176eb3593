"""The call sweep's hand-written mutants (docs/negative-controls.md, The
call sweep): each is one edit of the relay's or the consumer's source.

usage: mutants.py ROOT NAME   apply mutant NAME to the tree at ROOT
       mutants.py list        print the names
"""
# name, file, old, new, occurrence (0-based among matches)
M = [
 ("claim-rollback", "runner/internal/relay/claim.go", "\tdefer func() {\n\t\tif err != nil {\n\t\t\t_ = tx.Rollback()", "\tdefer func() {\n\t\tif err == nil {\n\t\t\t_ = tx.Rollback()", 0),
 ("mark-locked-rollback", "runner/internal/relay/mark.go", "\tdefer func() {\n\t\tif err != nil {\n\t\t\t_ = tx.Rollback()", "\tdefer func() {\n\t\tif err == nil {\n\t\t\t_ = tx.Rollback()", 0),
 ("mark-every-rollback-and", "runner/internal/relay/mark.go", "if hit == nil || err != nil {", "if hit == nil && err != nil {", 0),
 ("mark-every-rollback-neg", "runner/internal/relay/mark.go", "if hit == nil || err != nil {", "if hit != nil || err != nil {", 0),
 ("inbox-error-duplicate-neg", "runner/internal/consumer/effect.go", "errors.As(err, &me) && me.Number == mysqlDuplicateKey", "errors.As(err, &me) && me.Number != mysqlDuplicateKey", 0),
 ("inbox-error-duplicate-any", "runner/internal/consumer/effect.go", "errors.As(err, &me) && me.Number == mysqlDuplicateKey", "errors.As(err, &me)", 0),
 ("fetch-error-not-returned", "runner/internal/consumer/poll.go", "\tif ferr != nil {\n\t\tif err := c.callFailed", "\tif ferr != nil && false {\n\t\tif err := c.callFailed", 0),
 ("fetch-error-neg", "runner/internal/consumer/poll.go", "\tif ferr != nil {\n\t\tif err := c.callFailed", "\tif ferr == nil {\n\t\tif err := c.callFailed", 0),
 ("offset-commit-swallowed", "runner/internal/consumer/consumer.go", "\t\treturn c.commitFailed([]*kgo.Record{r}, err)\n", "\t\t_ = err // swallowed: logged as done below\n", 0),
 ("other-errors-answered", "runner/internal/consumer/effect.go", "\t\treturn me.Number == mysqlConnectionKilled || me.Number == mysqlServerShutdown\n\t}\n\treturn true", "\t\treturn me.Number == mysqlConnectionKilled || me.Number == mysqlServerShutdown\n\t}\n\treturn false", 0),
 ("killed-commit-answered", "runner/internal/consumer/effect.go", "me.Number == mysqlConnectionKilled || me.Number == mysqlServerShutdown", "me.Number != mysqlConnectionKilled || me.Number == mysqlServerShutdown", 0),
 ("killed-commit-dropped", "runner/internal/consumer/effect.go", "me.Number == mysqlConnectionKilled || me.Number == mysqlServerShutdown", "me.Number == mysqlServerShutdown", 0),
 ("relay-other-errors-answered", "runner/internal/relay/calls.go", "\t\treturn me.Number == mysqlConnectionKilled || me.Number == mysqlServerShutdown\n\t}\n\treturn true", "\t\treturn me.Number == mysqlConnectionKilled || me.Number == mysqlServerShutdown\n\t}\n\treturn false", 0),
]
import sys
if sys.argv[1:] == ["list"]:
    print(" ".join(m[0] for m in M))
    sys.exit(0)
root, name = sys.argv[1], sys.argv[2]
for n, f, old, new, occ in M:
    if n != name: continue
    p = root + "/" + f
    s = open(p).read()
    idx = -1
    for _ in range(occ + 1):
        idx = s.index(old, idx + 1)
    s = s[:idx] + new + s[idx + len(old):]
    open(p, "w").write(s)
    print(f)
    sys.exit(0)
sys.exit("no mutant " + name)
