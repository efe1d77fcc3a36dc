#!/usr/bin/env node
// Writes docs/openapi.json, the committed copy of the OpenAPI 3.1 document that @po/contracts
// generates from its JSON Schemas (decision 0041). It reads the built package, so build first:
//
//   npx tsc --build libs/contracts && node libs/contracts/scripts/openapi.mjs
//
// `--check` writes nothing and exits 1 when the committed file differs from the schemas; the unit
// test libs/contracts/src/openapi.test.ts makes the same comparison in CI.
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';

const target = fileURLToPath(new URL('../../../docs/openapi.json', import.meta.url));
const check = process.argv.includes('--check');

let contracts;
try {
  contracts = await import('../dist/index.js');
} catch (err) {
  console.error(`Cannot load libs/contracts/dist (${err.message}). Run \`npm run build\` first.`);
  process.exit(1);
}
const document = contracts.buildOpenApiDocument();

if (check) {
  let committed;
  try {
    committed = JSON.parse(await readFile(target, 'utf8'));
  } catch (err) {
    console.error(`Cannot read ${target}: ${err.message}`);
    process.exit(1);
  }
  if (!isDeepStrictEqual(committed, JSON.parse(JSON.stringify(document)))) {
    console.error(`${target} is out of date: run \`node libs/contracts/scripts/openapi.mjs\`.`);
    process.exit(1);
  }
  console.log(`${target} matches the schemas.`);
  process.exit(0);
}

// Formatted like the rest of the repository when prettier (a root dev dependency) is installed.
let text = `${JSON.stringify(document, null, 2)}\n`;
try {
  const prettier = await import('prettier');
  const options = (await prettier.resolveConfig(target)) ?? {};
  text = await prettier.format(text, { ...options, parser: 'json' });
} catch {
  // Plain JSON.stringify output is fine too; the check compares parsed documents.
}
await writeFile(target, text);
console.log(
  `wrote ${target} (${Object.keys(document.paths).length} paths, ${Object.keys(document.components.schemas).length} schemas)`,
);
