// `npm run setup`: installs the dependencies (`npm ci`) with the Node the project runs on.
//
// The project needs Node >= 22.12 (pg-boss 12 and Scalar declare it; Node 20 left support in April
// 2026). npm checks every dependency's `engines` against the Node running npm itself, so `npm ci`
// on an older Node prints a wall of EBADENGINE warnings even though the project never runs there:
// on Linux, the optional `node-linux-*` dependency puts Node 22 in node_modules/.bin, where every
// npm script and npx command finds it first. So on an older Node this runs the same `npm ci`
// under that Node 22, fetched once from the npm registry (npm exec's cache). Plain JavaScript with
// no dependencies: it runs before node_modules exists.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

const project = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
const NODE_RUNTIME_VERSION = project.optionalDependencies[`node-linux-${process.arch}`];
// `engines.node` is `>=MAJOR.MINOR` (tools/setup/node-runtime.test.ts holds it to that form).
const [needMajor, needMinor] = project.engines.node.slice(2).split('.').map(Number);
const [major, minor] = process.versions.node.split('.').map(Number);
const needed = `${needMajor}.${needMinor}`;
const npmCli = process.env.npm_execpath;
const ciArgs = ['ci', '--no-audit', '--no-fund', ...process.argv.slice(2)];

function run(command, args) {
  const result = spawnSync(command, args, { stdio: 'inherit' });
  process.exit(result.status ?? 1);
}

if (!npmCli) {
  console.error('Run this as `npm run setup`.');
  process.exit(1);
}
if (major > needMajor || (major === needMajor && minor >= needMinor)) run(process.execPath, [npmCli, ...ciArgs]);
if (process.platform !== 'linux' || !NODE_RUNTIME_VERSION) {
  console.error(`This project needs Node.js ${needed} or newer; this is ${process.version}. Install it and run \`npm run setup\` again.`);
  process.exit(1);
}
console.log(`Node ${process.version} is older than the project's ${needed}: installing with Node ${NODE_RUNTIME_VERSION} from the npm registry.`);
run(process.execPath, [npmCli, 'exec', '--yes', `--package=node-linux-${process.arch}@${NODE_RUNTIME_VERSION}`, '--', 'node', npmCli, ...ciArgs]);
