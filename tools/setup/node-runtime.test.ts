import { readFileSync } from 'node:fs';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

const root = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  engines: { node: string };
  optionalDependencies: Record<string, string>;
};

describe('the Node the project runs on', () => {
  it('is the one package.json engines asks for, whatever Node ran npm (npm run setup, tools/setup/setup.mjs)', () => {
    // The form tools/setup/setup.mjs reads without a semver library (it runs before node_modules exists).
    expect(root.engines.node).toMatch(/^>=\d+\.\d+$/);
    expect(semver.satisfies(process.version, root.engines.node), `${process.version} runs the tests; engines says ${root.engines.node}`).toBe(true);
  });

  it('brings a Node inside the range on Linux, one version for every architecture', () => {
    const versions = Object.entries(root.optionalDependencies).filter(([name]) => name.startsWith('node-linux-')).map(([, version]) => version);
    expect(versions.length).toBeGreaterThan(0);
    expect(new Set(versions).size).toBe(1);
    expect(semver.satisfies(versions[0], root.engines.node)).toBe(true);
  });
});
