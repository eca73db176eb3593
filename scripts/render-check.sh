#!/usr/bin/env bash
# render-check.sh renders Markdown reports as GitHub shows them (pandoc GFM,
# the `mermaid` npm package, headless Chromium at a 1400 px window with
# GitHub's 1012 px column) and fails when a reviewer could not read them: a
# Mermaid diagram that does not parse, a diagram scaled below --min-scale to
# fit the column, or a page taller than --max-height with every <details>
# folded. It prints each diagram's scale and the page height, and writes a
# PNG per screen and per diagram, the HTML and summary.json into --out.
#
#   scripts/render-check.sh [--install] [--out DIR] [--min-scale 0.7] [--max-height 8000] report.md...
#   scripts/render-check.sh --self-test   # proves the check fails on a wide diagram, a Mermaid
#                                         # error and a tall page (scripts/render-check/testdata/)
#
# Needs pandoc, chromium and node (Debian packages: `apt-get install pandoc
# chromium nodejs npm`; .ci/run installs them) and the pinned npm packages
# of scripts/render-check/ (package-lock.json), which --install (or a
# missing node_modules) installs with `npm ci`. Exit 0 when every report is
# acceptable, 1 when one is not, 2 for bad usage or a missing tool.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="$here/render-check"
out=""
install=false
selftest=false
args=()
while [ $# -gt 0 ]; do
	case "$1" in
	--install) install=true ;;
	--self-test) selftest=true ;;
	--out) out="${2:?--out needs a directory}"; shift ;;
	--min-scale | --max-height) args+=("$1" "${2:?$1 needs a value}"); shift ;;
	--no-screens) args+=("$1") ;;
	-h | --help) sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "render-check: unknown flag $1" >&2; exit 2 ;;
	*) args+=("$(realpath "$1")") ;;
	esac
	shift
done

for tool in pandoc chromium node npm; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "render-check: $tool not found (apt-get install pandoc chromium nodejs npm)" >&2
		exit 2
	fi
done
if $install || [ ! -d "$dir/node_modules/mermaid" ] || [ ! -d "$dir/node_modules/puppeteer-core" ]; then
	# The pinned versions of package-lock.json, nothing else; puppeteer-core
	# must not download a browser (it drives Debian's chromium).
	(cd "$dir" && PUPPETEER_SKIP_DOWNLOAD=1 timeout 300 npm ci --no-audit --no-fund --loglevel=error)
fi
if [ -z "$out" ]; then
	out="$(mktemp -d "${TMPDIR:-/tmp}/render-check.XXXXXX")"
fi
mkdir -p "$out"

# expect NAME WANT-EXIT PATTERN... runs the check on the self-test pages
# (the rest of the arguments after --) and fails unless it exits WANT-EXIT
# and prints every pattern.
expect() {
	local name="$1" want="$2" log="$out/$1.log" got=0
	shift 2
	local patterns=()
	while [ "$1" != "--" ]; do patterns+=("$1"); shift; done
	shift
	timeout 300 node "$dir/render.mjs" --out "$out/$name" --no-screens "$@" >"$log" 2>&1 || got=$?
	if [ "$got" != "$want" ]; then
		echo "render-check self-test $name: exit $got; want $want" >&2; cat "$log" >&2; return 1
	fi
	for p in "${patterns[@]}"; do
		if ! grep -qF -- "$p" "$log"; then
			echo "render-check self-test $name: output lacks \"$p\"" >&2; cat "$log" >&2; return 1
		fi
	done
	echo "render-check self-test $name: exit $got as wanted"
}

if $selftest; then
	t="$dir/testdata"
	expect accepted 0 "diagram 1 under \"Render check: an acceptable page\": scale 1 " "0 not acceptable" -- "$t/good.md"
	expect wide 1 "FAIL: diagram 1 (under \"Render check: a diagram too wide for the column\"): scale 0." -- "$t/wide.md"
	expect mermaid-error 1 "FAIL: diagram 1 (under \"Render check: a diagram Mermaid cannot parse\"): Mermaid error" -- "$t/broken.md"
	expect too-tall 1 "FAIL: page height" -- --max-height 100 "$t/good.md"
	exit 0
fi

# The whole check is bounded: a browser that hangs must not hold CI.
exec timeout 600 node "$dir/render.mjs" --out "$out" "${args[@]}"
