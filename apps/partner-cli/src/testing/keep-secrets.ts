/**
 * A `lop` process's share of the secrets file, for secrets.test.ts: waits until the go file
 * exists (so every process starts at once), then asks for the secret of each URL given and
 * prints what it got, one JSON line each — what `lop listen` would print as its signing secret.
 * Usage: node --import tsx keep-secrets.ts <go-file> <url>…  (XDG_CONFIG_HOME chooses the file)
 */
import { existsSync } from 'node:fs';
import { secretFor } from '../secrets';

const [goFile, ...urls] = process.argv.slice(2);
process.stdout.write('ready\n');
while (!existsSync(goFile)) await new Promise((resolve) => setTimeout(resolve, 5));
for (const url of urls) {
  const { secret, source, key } = await secretFor(new URL(url));
  process.stdout.write(`${JSON.stringify({ url, key, secret, source })}\n`);
}
