import { describe, expect, it } from 'vitest';
import { compareInstalls, type Lockfile } from './previous-release';

const lock = (packages: Record<string, string>): Lockfile => ({
  packages: { '': {}, ...Object.fromEntries(Object.entries(packages).map(([path, version]) => [`node_modules/${path}`, { version }])) },
});

describe('running the previous release on this checkout\'s installed packages', () => {
  it('is right when every package it installs is here in the same version', () => {
    expect(compareInstalls(lock({ a: '1.0.0', 'a/node_modules/b': '2.0.0' }), lock({ a: '1.0.0', 'a/node_modules/b': '2.0.0' }))).toEqual({ differing: [], absent: [] });
  });

  it('names a package in another version, and a nested copy that would resolve to this checkout\'s', () => {
    expect(compareInstalls(lock({ a: '1.1.0' }), lock({ a: '1.0.0' })).differing).toEqual(['a@1.0.0']);
    // Theirs nests b under a; ours has a but hoists another b: a would load ours.
    expect(compareInstalls(lock({ a: '1.0.0', b: '3.0.0' }), lock({ a: '1.0.0', 'a/node_modules/b': '2.0.0' })).differing).toEqual(['a/node_modules/b@2.0.0']);
    // Ours nests a b under a that theirs resolves to its hoisted one.
    expect(compareInstalls(lock({ a: '1.0.0', b: '2.0.0', 'a/node_modules/b': '3.0.0' }), lock({ a: '1.0.0', b: '2.0.0' })).differing).toEqual(['a/node_modules/b (only here)']);
  });

  it('tells a package this checkout dropped, with all it brought, from one that differs', () => {
    const ours = lock({ kept: '1.0.0', added: '1.0.0' });
    const theirs = lock({ kept: '1.0.0', '@scope/dropped': '0.1.0', '@scope/dropped/node_modules/nanoid': '5.0.0', 'came-with-it': '2.0.0' });
    expect(compareInstalls(ours, theirs)).toEqual({ differing: [], absent: ['@scope/dropped', 'came-with-it'] });
  });
});
