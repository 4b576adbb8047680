import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const root = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  engines: { node: string };
  optionalDependencies: Record<string, string>;
};

const parse = (version: string) => version.replace(/^v|^>=/, '').split('.').map(Number);
const atLeast = (version: number[], floor: number[]) => {
  for (let i = 0; i < floor.length; i++) if ((version[i] ?? 0) !== floor[i]) return (version[i] ?? 0) > floor[i];
  return true;
};

describe('the Node the project runs on', () => {
  it('is the one package.json engines asks for, whatever Node ran npm (npm run setup, tools/setup/setup.mjs)', () => {
    expect(root.engines.node).toMatch(/^>=\d+\.\d+$/);
    expect(atLeast(parse(process.version), parse(root.engines.node)), `${process.version} runs the tests; engines says ${root.engines.node}`).toBe(true);
  });

  it('brings a Node inside the range on Linux, one version for every architecture', () => {
    const versions = Object.entries(root.optionalDependencies).filter(([name]) => name.startsWith('node-linux-')).map(([, version]) => version);
    expect(versions.length).toBeGreaterThan(0);
    expect(new Set(versions).size).toBe(1);
    expect(atLeast(parse(versions[0]), parse(root.engines.node))).toBe(true);
  });
});
