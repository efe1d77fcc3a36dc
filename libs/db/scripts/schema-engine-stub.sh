#!/bin/sh
echo "The native Prisma schema engine is not available on this machine; use 'npm run migrate' (wasm engine)." >&2
exit 1
