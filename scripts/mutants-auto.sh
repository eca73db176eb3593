# mutants-auto.sh is the automatic mode of scripts/mutants.sh (-a), sourced
# by it once the tree is copied to $src: it lists the mutants with gremlins
# and scripts/mutapply, runs the baseline, then each mutant (or a seeded
# sample) until its first kill or $runs runs, and prints the kill rate over
# the mutants that build and are not triaged equivalent.
# shellcheck shell=bash disable=SC2154

gremlins_bin="$(command -v gremlins || echo "$HOME/go/bin/gremlins")"
if ! [ -x "$gremlins_bin" ]; then
	echo "mutants.sh: gremlins is required for -a (go install github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0)" >&2
	exit 2
fi
if ! [[ "$sample" =~ ^[0-9]+$ ]] || ! [[ "$seed" =~ ^[0-9]+$ ]]; then
	echo "mutants.sh: -s and -S want numbers" >&2
	exit 2
fi

mutapply="$out/bin/mutapply"
(cd "$src" && go build -buildvcs=false -o "$mutapply" ./scripts/mutapply)

# The list: gremlins' dry run per package (every mutation type that makes
# sense for this code; bitwise ones find nothing here), then mutapply.
pairs=()
for pkg in runner/internal/relay runner/internal/consumer runner/internal/orders; do
	rep="$out/gremlins-$(basename "$pkg").json"
	(cd "$src" && "$gremlins_bin" unleash --dry-run --silent \
		--invert-logical --invert-loopctrl --invert-assignments --remove-self-assignments \
		-E 'client\.go$' -E '_test\.go$' -o "$rep" "./$pkg") >/dev/null
	pairs+=("$rep" "$pkg")
done
list="$out/mutants.tsv"
{
	"$mutapply" list "$src" "${pairs[@]}"
	"$mutapply" list-sql "$src"
} | grep -v $'\t''runner/internal/orders/client.go:' >"$list"
if [ $# -gt 0 ]; then
	pat="$(printf '%s\n' "$@" | paste -sd'|' -)"
	grep -E "$pat" "$list" >"$list.f" || true
	mv "$list.f" "$list"
fi
total="$(wc -l <"$list")"
if [ "$sample" -gt 0 ] && [ "$sample" -lt "$total" ]; then
	# shuf with a seeded byte stream: the same seed picks the same mutants.
	shuf -n "$sample" --random-source=<(openssl enc -aes-256-ctr -pass pass:"$seed" -nosalt </dev/zero 2>/dev/null) "$list" |
		sort >"$list.s"
	mv "$list.s" "$list"
fi
echo "mutants.sh: $total automatic mutants listed, $(wc -l <"$list") to run ($out/mutants.tsv)" >&2

triage="$root/scripts/mutants/equivalent.tsv"
declare -A equivalent=()
if [ -f "$triage" ]; then
	while IFS=$'\t' read -r id reason; do
		[[ -z "$id" || "$id" == \#* ]] && continue
		equivalent["$id"]="$reason"
	done <"$triage"
fi

# audit NAME: builds the tree as it is and runs it until the first run that
# does not verify PASS, at most $runs times. Sets verdicts and rules.
audit() {
	local name="$1" bin="$out/bin/auto" i
	verdicts=() rules=""
	if ! (cd "$src" && go build -buildvcs=false -o "$bin" ./cmd/orderflow-audit) 2>"$out/build.err"; then
		verdicts=(NO_BUILD)
		return
	fi
	for i in $(seq 1 "$runs"); do
		local dir="$out/runs/$name/$i" verdict=NO_EVIDENCE stage
		# Two stages: the default suite (a few seconds) first, and only
		# when it verifies PASS the whole of run --full, which contains
		# it. A mutant the first stage kills would fail run --full's
		# default suite the same way; the stages only save the time of
		# the scenarios after it. STAGE says which one killed it.
		for stage in default full; do
			mkdir -p "$dir/$stage"
			local flags=()
			[ "$stage" = full ] && flags=(--full)
			verdict=NO_EVIDENCE
			"$bin" run "${flags[@]}" --out "$dir/$stage/u80.json" >"$dir/$stage/run.out" 2>"$dir/$stage/run.err" || true
			if [ -f "$dir/$stage/u80.json" ]; then
				"$bin" verify --json "$dir/$stage/u80.json" >"$dir/$stage/verify.json" 2>"$dir/$stage/verify.err" || true
				verdict="$(jq -r '.status // "ERROR"' "$dir/$stage/verify.json" 2>/dev/null || echo ERROR)"
				rules="$(jq -r '.reasons[]?.rule' "$dir/$stage/verify.json" 2>/dev/null | sort | uniq -c | sort -rn | awk '{print $2}' | head -4 | paste -sd, -)"
			fi
			[ "$verdict" = PASS ] || break
		done
		verdicts+=("$verdict")
		[ "$verdict" = PASS ] || break
	done
}

table="$out/auto.tsv"
: >"$table"
status=0
audit baseline
printf 'baseline: %s\n' "${verdicts[*]}" >&2
for v in "${verdicts[@]}"; do
	if [ "$v" != PASS ]; then
		echo "mutants.sh: the unchanged tree does not pass the audit; see $out/runs/baseline" >&2
		exit 1
	fi
done

n=0 killed=0 lived=0 nobuild=0 equiv=0 equiv_killed=0
while IFS=$'\t' read -r id at typ what; do
	n=$((n + 1))
	file="${at%%:*}"
	cp "$src/$file" "$out/orig"
	if ! "$mutapply" apply "$src" "$id"; then
		echo "mutants.sh: $id does not apply" >&2
		exit 2
	fi
	safe="$(printf '%s' "$id" | tr -c 'A-Za-z0-9._-' '_')"
	audit "$safe"
	cp "$out/orig" "$src/$file"
	last="${verdicts[${#verdicts[@]}-1]}"
	if [ "$last" = NO_BUILD ]; then
		result=unbuildable
		nobuild=$((nobuild + 1))
	elif [ -n "${equivalent[$id]:-}" ]; then
		if [ "$last" = PASS ]; then
			result=equivalent equiv=$((equiv + 1))
		else
			result="triaged equivalent, but killed" equiv_killed=$((equiv_killed + 1))
		fi
	elif [ "$last" = PASS ]; then
		result=LIVED lived=$((lived + 1))
	else
		result=killed killed=$((killed + 1))
	fi
	printf '%s %s: %s (%s)\n' "$n" "$id" "$result" "${verdicts[*]}" >&2
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$at" "$typ" "$what" "$result" "${verdicts[*]}" "${rules:--}" >>"$table"
done <"$list"

counted=$((killed + lived + equiv_killed))
{
	echo "| mutant | place | type | change | result | verdicts | rules |"
	echo "| --- | --- | --- | --- | --- | --- | --- |"
	while IFS=$'\t' read -r id at typ what result verdicts rules; do
		[ "$result" = killed ] && continue
		what="${what//|/\\|}"
		echo "| \`$id\` | $at | $typ | \`$what\` | $result | $verdicts | $rules |"
	done <"$table"
	echo
	if [ "$counted" -gt 0 ]; then
		echo "**$((killed + equiv_killed)) of $counted non-equivalent mutants killed ($((100 * (killed + equiv_killed) / counted)) %)**; $n run, $equiv triaged equivalent (PASS as expected), $equiv_killed triaged equivalent but killed, $nobuild do not build."
	fi
} | tee "$out/table.md"
[ "$lived" -eq 0 ] || status=1
$keep && echo "runs kept in $out" >&2
exit $status
