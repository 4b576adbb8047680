import { OPENAPI_PATH, PARTNER_BASE_PATH } from '@lop/contract';

/** Where the console keeps its key (sessionStorage, this origin): /docs reads it to try requests with it. */
export const CONSOLE_KEY_STORAGE = 'lop.sandbox-console.key';

/** The reference's settings that are plain data; the try-it behaviour is in TRY_IT below. */
export interface ReferenceSettings {
  [option: string]: unknown;
}

/**
 * Runs in the reader's browser before the reference renders. With a sandbox key the console left
 * in this tab, the create-order example becomes the running sandbox's own minimal fixture (real
 * program and item ids) and Test Request is authorised with that key. Every Test Request of
 * POST /orders without an Idempotency-Key gets a fresh one, so a try never fails with 400 nor
 * replays the previous try; and each send of the example's external_order_id sends a fresh one
 * instead (the API refuses a second order with the same one: 409 duplicate_external_order_id),
 * through Scalar's onBeforeRequest, which may change the body about to be sent. An
 * external_order_id the reader typed is sent as typed. Plain ES2020: it is served as is.
 */
export const TRY_IT = String.raw`
(async () => {
  const page = JSON.parse(document.getElementById('reference-settings').textContent);
  const createPath = page.createOrderPath;
  const freshId = () => {
    const b = crypto.getRandomValues(new Uint8Array(16));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    const h = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
    return h.slice(0, 8) + '-' + h.slice(8, 12) + '-' + h.slice(12, 16) + '-' + h.slice(16, 20) + '-' + h.slice(20);
  };
  let key = null;
  try {
    key = sessionStorage.getItem(page.keyStorage);
  } catch {}
  const openapi = await (await fetch(page.openApiUrl)).json();
  const create = openapi.paths && openapi.paths[createPath] && openapi.paths[createPath].post;
  const freshOrderId = () => 'docs-' + freshId().slice(0, 8);
  // The example bodies' external_order_id values: a send that still carries one gets a fresh one.
  const exampleOrderIds = new Set();
  const media = create && create.requestBody && create.requestBody.content && create.requestBody.content['application/json'];
  if (create) {
    create.description = (create.description || '') +
      '\n\n**Test Request here:** leave Idempotency-Key empty and each try sends a fresh one (type one yourself to try a replay).' +
      ' external_order_id must be unique among your orders: each try of the example sends a fresh one (docs-…), shown in the response; type your own to send it as is.' +
      (key ? ' The example body is your sandbox\'s own minimal fixture.' : ' Open the sandbox console and enter a sandbox key first, and the example body becomes your sandbox\'s own fixture.');
  }
  if (key && create) {
    try {
      const response = await fetch(page.fixturesUrl, { headers: { authorization: 'Bearer ' + key } });
      if (response.ok) {
        const fixtures = (await response.json()).data;
        const fixture = fixtures.find((f) => f.contract === 'minimal' && f.body) || fixtures.find((f) => f.body);
        if (fixture && media) {
          media.example = Object.assign({}, fixture.body, { external_order_id: freshOrderId() });
          delete media.examples;
          // Path parameters named programId get the same program, so a catalog or requirements try works too.
          for (const item of Object.values(openapi.paths)) {
            for (const operation of Object.values(item)) {
              for (const parameter of (operation && operation.parameters) || []) {
                if (parameter.in === 'path' && parameter.name === 'programId') parameter.example = fixture.body.program_id;
              }
            }
          }
        }
      }
    } catch {}
  }
  if (media) {
    for (const example of [media.example].concat(Object.values(media.examples || {}).map((e) => e && e.value))) {
      if (example && typeof example.external_order_id === 'string') exampleOrderIds.add(example.external_order_id);
    }
  }
  const isCreate = (request) => request.method === 'POST' && new URL(request.url).pathname === createPath;
  Scalar.createApiReference('#app', Object.assign({}, page.reference, {
    content: openapi,
    authentication: Object.assign({ preferredSecurityScheme: 'bearerAuth' }, key ? { securitySchemes: { bearerAuth: { token: key } } } : {}),
    onBeforeRequest: ({ request, requestBuilder }) => {
      const body = requestBuilder && requestBuilder.body;
      if (!isCreate(request) || !body || body.mode !== 'raw' || typeof body.value !== 'string') return;
      try {
        const json = JSON.parse(body.value);
        if (json && exampleOrderIds.has(json.external_order_id)) body.value = JSON.stringify(Object.assign(json, { external_order_id: freshOrderId() }), null, 2);
      } catch {}
    },
    onRequestBuilt: ({ request }) => {
      if (isCreate(request) && !request.headers.get('idempotency-key')) {
        request.headers.set('Idempotency-Key', freshId());
      }
    },
  }));
})();
`;

const escapeHtml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** The /docs page: Scalar's reference (its local bundle), set up by TRY_IT with the console's key when there is one. */
export function docsPage(options: { title: string; scriptPath: string; reference: ReferenceSettings; header?: string }): string {
  const settings = {
    openApiUrl: OPENAPI_PATH,
    createOrderPath: `${PARTNER_BASE_PATH}/v1/orders`,
    fixturesUrl: `${PARTNER_BASE_PATH}/v1/sandbox/order-fixtures`,
    keyStorage: CONSOLE_KEY_STORAGE,
    reference: options.reference,
  };
  // JSON in a script element: "<" escaped so no value can close the element.
  const json = JSON.stringify(settings).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en">
  <head>
    <title>${escapeHtml(options.title)}</title>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
  </head>
  <body>
    ${options.header ?? ''}
    <div id="app"></div>
    <script type="application/json" id="reference-settings">${json}</script>
    <script src="${options.scriptPath}"></script>
    <script>${TRY_IT}</script>
  </body>
</html>`;
}
