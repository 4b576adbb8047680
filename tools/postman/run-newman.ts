// Runs the committed Postman collection with newman, end to end, against the service started on
// a fresh database (`npm run postman:run`; CI runs it after the tests). Exit code 1 on any failure.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
// @ts-expect-error newman ships no type declarations
import newman from 'newman';
import { PROJECT_ROOT } from '@lop/domain';
import { withFreshSandbox } from '../sandbox-service/fresh-sandbox';
import { COLLECTION_FILE, ENVIRONMENT_FILE } from './files';

const readJson = (path: string) => JSON.parse(readFileSync(join(PROJECT_ROOT, path), 'utf8'));

const code = await withFreshSandbox('newman', async (sandbox) => {
  const environment = readJson(ENVIRONMENT_FILE);
  for (const variable of environment.values) {
    if (variable.key === 'base_url') variable.value = sandbox.baseUrl;
    if (variable.key === 'api_key') variable.value = sandbox.key;
  }
  const summary = await new Promise<any>((resolve, reject) => {
    newman.run({ collection: readJson(COLLECTION_FILE), environment, reporters: ['cli'], reporter: { cli: { noSummary: false } }, timeoutRequest: 30_000 }, (error: unknown, result: any) =>
      error ? reject(error) : resolve(result),
    );
  });
  const { assertions, requests } = summary.run.stats;
  const failures = summary.run.failures.length;
  console.log(`newman: ${requests.total} requests, ${assertions.total} assertions, ${failures === 0 ? 'no failures' : `${failures} failure(s)`}`);
  if (failures > 0) console.error(sandbox.output().slice(-4000));
  return failures === 0 ? 0 : 1;
});
process.exit(code);
