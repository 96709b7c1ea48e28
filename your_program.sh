#!/usr/bin/env bash
# The grader's entry point: `./your_program.sh mcp-frame <fixture.json>` runs `mcp-frame frame <fixture.json>`.
# Any other mcp-frame command passes through: `./your_program.sh mcp-frame help`.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ ! -f "$here/dist/lib/cli/main.js" ]; then
  (cd "$here" && { [ -d node_modules ] || npm ci --silent; } && npm run --silent build) >&2
fi
[ "${1:-}" = "mcp-frame" ] && shift
case "${1:-}" in
  frame | help | --help | -h | --version | -v) ;;
  *) set -- frame "$@" ;;
esac
exec node "$here/dist/lib/cli/main.js" "$@"
