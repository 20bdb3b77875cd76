#!/usr/bin/env bash
# Install the independent wire-format peer (@copilotkit/aimock) into the ignored .peers/ folder.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .peers
if [ ! -x .peers/node_modules/.bin/llmock ]; then
  npm install --prefix .peers --no-audit --no-fund --silent @copilotkit/aimock@1.43.0
fi
