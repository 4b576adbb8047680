import { relative } from 'node:path';
import { OPENAPI_PATH, PARTNER_BASE_PATH } from '@lop/contract';
import type { DatabaseLocation } from '@lop/db';
import { bannerKeyNote, type DemoBannerSeedResult } from '@lop/domain';

/** The origin a person can paste into a browser: a wildcard listen address is reached over loopback. */
function publicOrigin(apiUrl: string): string {
  const url = new URL(apiUrl);
  if (url.hostname === '0.0.0.0' || url.hostname === '[::]') url.hostname = 'localhost';
  return url.origin;
}

/** What a newcomer needs to make the first call, printed once the service listens. */
export function banner(input: { apiUrl: string; demo: DemoBannerSeedResult; database: DatabaseLocation; dataDir: string; consoleBuilt: boolean }): string {
  const { demo } = input;
  const origin = publicOrigin(input.apiUrl);
  const apiBase = `${origin}${PARTNER_BASE_PATH}/v1`;
  const database =
    input.database.source === 'embedded' ? `embedded PostgreSQL, data in ${relative(process.cwd(), input.dataDir) || input.dataDir}` : 'DATABASE_URL';
  const rows: [string, string][] = [
    ['API base URL', apiBase],
    ['OpenAPI', `${origin}${OPENAPI_PATH}`],
    ['Sandbox console', `${origin}/console${input.consoleBuilt ? '' : '  (not built yet)'}`],
    ['Laboratory', demo.laboratory_id],
    ['API client', demo.client_id],
    ['Sandbox key', `${demo.sandbox_key}  (${bannerKeyNote(demo.sandbox_key_status, demo.sandbox_key_file)})`],
    ['Database', database],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  return [
    '',
    'Laboratory ordering partner service is ready.',
    '',
    ...rows.map(([label, value]) => `  ${label.padEnd(width)}  ${value}`),
    '',
    'Try it:',
    `  curl -H "Authorization: Bearer ${demo.sandbox_key}" ${apiBase}/health`,
    '',
    'Stop with Ctrl-C.',
    '',
  ].join('\n');
}

