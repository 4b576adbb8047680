import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { loadConfig } from '@lop/domain';
import { createLogger, startPartnerApi, type RunningApi } from '@lop/partner-api';
import { ensureConsoleBuilt } from '../ensure-built';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

let api: RunningApi;
let dir: string;

beforeAll(async () => {
  ({ dir } = await ensureConsoleBuilt());
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', PARTNER_DB_POOL_SIZE: '2', PARTNER_ENCRYPTION_KEY: randomBytes(32).toString('base64') });
  api = await startPartnerApi({ config, databaseUrl: inject('databaseUrl'), logger: createLogger(config, 'console-headers-e2e'), consoleDir: dir });
});

afterAll(async () => {
  await api?.close();
});

const filesOf = (folder: string): string[] => readdirSync(folder, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesOf(join(folder, e.name)) : [join(folder, e.name)]));

describe('the built console as the API serves it', () => {
  it('sends a Content-Security-Policy with frame-ancestors \'none\' (and X-Frame-Options: DENY) on the page, its deep links and its assets', async () => {
    const asset = filesOf(dir).find((f) => f.endsWith('.js'))!.slice(dir.length).replaceAll('\\', '/');
    for (const path of ['/console', '/console/', '/console/orders/abc', `/console${asset}`]) {
      const response = await fetch(`${api.url}${path}`);
      expect(response.status, path).toBe(200);
      const csp = response.headers.get('content-security-policy') ?? '';
      expect(csp, path).toContain("frame-ancestors 'none'");
      expect(csp, path).toContain("script-src 'self'");
      expect(csp, path).not.toContain('unsafe-inline');
      expect(response.headers.get('x-frame-options'), path).toBe('DENY');
    }
  });

  it('serves no source maps: the build writes none, its scripts name none, and a .map path is 404', async () => {
    const files = filesOf(dir);
    expect(files.filter((f) => f.endsWith('.map'))).toEqual([]);
    const scripts = files.filter((f) => f.endsWith('.js'));
    expect(scripts.length).toBeGreaterThan(0);
    for (const script of scripts) expect(readFileSync(script, 'utf8'), script).not.toMatch(/sourceMappingURL/);
    const asset = scripts[0].slice(dir.length).replaceAll('\\', '/');
    const map = await fetch(`${api.url}/console${asset}.map`);
    expect(map.status).toBe(404);
    expect(((await map.json()) as { error: { code: string } }).error.code).toBe('not_found');
  });
});
