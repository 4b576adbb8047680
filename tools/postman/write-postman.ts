// `npm run postman` writes the Postman collection and sandbox environment template generated
// from the OpenAPI document; `--check` fails when the committed files differ.
import { buildOpenApiDocument } from '@lop/domain';
import { jsonText, writeOrCheck } from '../openapi/generated-file';
import { buildPostmanCollection, buildSandboxEnvironment } from './build-collection';
import { COLLECTION_FILE, ENVIRONMENT_FILE } from './files';

const collection = await buildPostmanCollection(buildOpenApiDocument());
writeOrCheck(
  [
    { path: COLLECTION_FILE, content: jsonText(collection) },
    { path: ENVIRONMENT_FILE, content: jsonText(buildSandboxEnvironment()) },
  ],
  { check: process.argv.includes('--check'), command: 'npm run postman' },
);
