// `npm run asyncapi` writes docs/asyncapi.json (webhook deliveries) from the Zod event schemas;
// `--check` fails when the committed file differs.
import { buildAsyncApiDocument } from '@lop/domain';
import { jsonText, writeOrCheck } from '../openapi/generated-file';

export const ASYNCAPI_FILE = 'docs/asyncapi.json';

writeOrCheck([{ path: ASYNCAPI_FILE, content: jsonText(buildAsyncApiDocument()) }], { check: process.argv.includes('--check'), command: 'npm run asyncapi' });
