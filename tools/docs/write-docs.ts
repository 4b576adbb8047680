// `npm run docs` refreshes the generated blocks of the partner docs from the code; `--check`
// fails when a committed block differs (see generate-docs.ts).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '@lop/domain';
import { writeOrCheck } from '../openapi/generated-file';
import { DOC_FILES, fillBlocks, generatedBlocks } from './generate-docs';

const blocks = generatedBlocks();
writeOrCheck(
  DOC_FILES.map((path) => ({ path, content: fillBlocks(readFileSync(join(PROJECT_ROOT, path), 'utf8'), blocks) })),
  { check: process.argv.includes('--check'), command: 'npm run docs' },
);
