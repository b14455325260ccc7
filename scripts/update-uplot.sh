#!/usr/bin/env bash
# Vendor uPlot's release files from the npm registry into the live page's
# assets (internal/live/assets/uplot). Usage: scripts/update-uplot.sh 1.6.32
set -euo pipefail
VERSION=${1:?usage: $0 VERSION}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
(cd "$tmp" && npm pack "uplot@$VERSION" > /dev/null && tar xzf "uplot-$VERSION.tgz")
dst=internal/live/assets/uplot
cp "$tmp/package/dist/uPlot.iife.min.js" "$tmp/package/dist/uPlot.min.css" "$dst/"
cp "$tmp/package/LICENSE" "$dst/LICENSE"
sed -i "s/^uPlot [0-9.]* (MIT/uPlot $VERSION (MIT/" "$dst/README.md"
sha256sum "$dst"/uPlot.iife.min.js "$dst"/uPlot.min.css "$dst"/LICENSE
rm -rf "$tmp"
