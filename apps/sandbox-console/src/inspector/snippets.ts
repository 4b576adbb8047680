import type { RestRequest } from './rest-routes';

/**
 * A partner request as code to paste: curl, TypeScript with the typed client (openapi-fetch over
 * types openapi-typescript generates from the served OpenAPI document, as the partner CLI and the
 * quickstart use it) and Python with its standard library only (`urllib.request`, as the webhook
 * sample in docs/webhooks.md: it runs on any Python 3 with nothing to install). The key is
 * never in the text: every snippet reads it from PARTNER_API_KEY, so a copied snippet can be
 * pasted into a ticket or a chat without leaking it.
 */

export const KEY_VARIABLE = 'PARTNER_API_KEY';

/** POSIX shell single quotes: nothing inside is expanded. */
function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

export function curlSnippet(request: RestRequest): string {
  const lines = [`curl -sS -X ${request.method} ${shellQuote(request.url)}`, `  -H "Authorization: Bearer $${KEY_VARIABLE}"`];
  for (const [name, value] of Object.entries(request.headers)) lines.push(`  -H ${shellQuote(`${name}: ${value}`)}`);
  if (request.body !== undefined) lines.push(`  --data-raw ${shellQuote(JSON.stringify(request.body, null, 2))}`);
  return lines.join(' \\\n');
}

function indent(text: string, by: string): string {
  return text.replace(/\n/g, `\n${by}`);
}

/** A JavaScript object literal: JSON with unquoted keys where they are identifiers. */
function jsLiteral(value: unknown): string {
  return JSON.stringify(value, null, 2).replace(/^(\s*)"([A-Za-z_$][\w$]*)":/gm, '$1$2:');
}

export function typescriptSnippet(request: RestRequest): string {
  const origin = new URL(request.url).origin;
  const params: Record<string, unknown> = {};
  if (Object.keys(request.pathParams).length > 0) params.path = request.pathParams;
  if (Object.keys(request.query).length > 0) params.query = request.query;
  const header = Object.fromEntries(Object.entries(request.headers).filter(([name]) => name.toLowerCase() !== 'content-type'));
  if (Object.keys(header).length > 0) params.header = header;
  const options: string[] = [];
  if (Object.keys(params).length > 0) options.push(`params: ${indent(jsLiteral(params), '  ')}`);
  if (request.body !== undefined) options.push(`body: ${indent(jsLiteral(request.body), '  ')}`);
  const call = options.length > 0 ? `client.${request.method}('${request.pathTemplate}', {\n  ${options.join(',\n  ')},\n})` : `client.${request.method}('${request.pathTemplate}')`;
  return [
    `import createClient from 'openapi-fetch';`,
    `// Types: npx openapi-typescript ${origin}/api/public/partner-openapi -o partner-api.d.ts`,
    `import type { paths } from './partner-api';`,
    ``,
    `const client = createClient<paths>({`,
    `  baseUrl: '${origin}',`,
    `  headers: { Authorization: \`Bearer \${process.env.${KEY_VARIABLE}}\` },`,
    `});`,
    `const { data, error, response } = await ${call};`,
    `console.log(response.status, data ?? error);`,
  ].join('\n');
}

/** A Python literal: JSON strings and numbers are valid Python; true/false/null are not. */
function pyLiteral(value: unknown, depth = 0): string {
  const pad = '    '.repeat(depth + 1);
  const end = '    '.repeat(depth);
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'string' || typeof value === 'number') return JSON.stringify(value);
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    return `[\n${value.map((v) => `${pad}${pyLiteral(v, depth + 1)},`).join('\n')}\n${end}]`;
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) return '{}';
  return `{\n${entries.map(([k, v]) => `${pad}${JSON.stringify(k)}: ${pyLiteral(v, depth + 1)},`).join('\n')}\n${end}}`;
}

export function pythonSnippet(request: RestRequest): string {
  const [base] = request.url.split('?');
  const url = Object.keys(request.query).length > 0 ? `${JSON.stringify(base)} + "?" + urllib.parse.urlencode(${pyLiteral(request.query, 1)}, doseq=True)` : JSON.stringify(base);
  const headers = Object.entries(request.headers).filter(([name]) => name.toLowerCase() !== 'content-type');
  if (request.body !== undefined) headers.push(['Content-Type', 'application/json']);
  const headerLines = [`        "Authorization": f"Bearer {os.environ['${KEY_VARIABLE}']}",`, ...headers.map(([n, v]) => `        ${JSON.stringify(n)}: ${JSON.stringify(v)},`)];
  const args = [`    ${url},`, `    method=${JSON.stringify(request.method)},`, `    headers={\n${headerLines.join('\n')}\n    },`];
  if (request.body !== undefined) args.push(`    data=json.dumps(${pyLiteral(request.body, 1)}).encode(),`);
  return [
    `import json`,
    `import os`,
    `import urllib.error`,
    `import urllib.parse`,
    `import urllib.request`,
    ``,
    `request = urllib.request.Request(`,
    ...args,
    `)`,
    `try:`,
    `    with urllib.request.urlopen(request, timeout=30) as response:`,
    `        status, body = response.status, response.read()`,
    `except urllib.error.HTTPError as error:  # 4xx/5xx: the body is the error envelope`,
    `    status, body = error.code, error.read()`,
    `print(status, json.loads(body))`,
  ].join('\n');
}

export const SNIPPET_LANGUAGES = [
  { id: 'curl', label: 'curl', render: curlSnippet },
  { id: 'typescript', label: 'TypeScript', render: typescriptSnippet },
  { id: 'python', label: 'Python', render: pythonSnippet },
] as const;
export type SnippetLanguage = (typeof SNIPPET_LANGUAGES)[number]['id'];
