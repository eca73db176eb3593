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
args=()
while [ $# -gt 0 ]; do
	case "$1" in
	--install) install=true ;;
	--out) out="${2:?--out needs a directory}"; shift ;;
	--min-scale | --max-height) args+=("$1" "${2:?$1 needs a value}"); shift ;;
	--no-screens) args+=("$1") ;;
	-h | --help) sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
# The whole check is bounded: a browser that hangs must not hold CI.
exec timeout 600 node "$dir/render.mjs" --out "$out" "${args[@]}"
