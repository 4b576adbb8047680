// `npm run openapi` writes docs/openapi.json from the procedures; `npm run openapi:check` fails
// when the committed file differs. No servers: those depend on deployment configuration.
import { buildOpenApiDocument } from '@lop/domain';
import { jsonText, writeOrCheck } from './generated-file';

export const OPENAPI_FILE = 'docs/openapi.json';

writeOrCheck([{ path: OPENAPI_FILE, content: jsonText(buildOpenApiDocument()) }], { check: process.argv.includes('--check'), command: 'npm run openapi' });
