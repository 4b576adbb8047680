import { PARTNER_BASE_PATH } from '@lop/contract';
import { useId, useState } from 'react';
import type { RecordedCall } from '../inspector/call-log';
import { restRequestFor, type RestRequest } from '../inspector/rest-routes';
import { SNIPPET_LANGUAGES, type SnippetLanguage } from '../inspector/snippets';
import { keyHint, storedKey } from '../session';
import { randomId } from '../format';
import { CopyButton } from './CopyButton';

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Content Too Large',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

export const statusLine = (status: number) => `${status} ${STATUS_TEXT[status] ?? ''}`.trim();

/** The request a recorded call stands for, as a partner sends it over REST. */
export function restRequestOfCall(call: Pick<RecordedCall, 'path' | 'input' | 'idempotencyKey'>): RestRequest | null {
  return restRequestFor(call.path, call.input, window.location.origin, call.idempotencyKey ? { 'Idempotency-Key': call.idempotencyKey } : {});
}

/** The response headers as REST sends them: the tRPC door wraps a non-envelope success (the FHIR view) in its own JSON. */
function restHeaders(call: RecordedCall, request: RestRequest | null): Record<string, string> {
  const headers = call.responseHeaders ?? {};
  return call.state === 'ok' && request?.responseContentType && headers['content-type'] ? { ...headers, 'content-type': request.responseContentType } : headers;
}

function maskedAuthorization(): string {
  const key = storedKey();
  return `Bearer ${key ? keyHint(key) : 'lop_test_…'}`;
}

/**
 * One console action as the partner REST request and response it stands for: method, full URL,
 * headers (Authorization masked, Idempotency-Key shown), body, status and request_id; copyable as
 * curl, TypeScript and Python. With `preview` and no call yet, it shows what will be sent.
 */
export function Inspector({ call, preview, label }: { call?: RecordedCall; preview?: RestRequest | null; label: string }) {
  const [open, setOpen] = useState(false);
  const [language, setLanguage] = useState<SnippetLanguage>('curl');
  // Snippets repeat the Idempotency-Key that was sent (a replay) unless the reader asks for a fresh one.
  const [freshKey, setFreshKey] = useState<string | null>(null);
  const panelId = useId();
  const request = call ? restRequestOfCall(call) : (preview ?? null);
  if (!call && !request) return null;

  const status = call?.state === 'ok' ? request?.successStatus : call?.status;
  const summary = request ? `${request.method} ${new URL(request.url).pathname.replace(PARTNER_BASE_PATH, '')}` : `tRPC ${call!.path}`;
  const sentKey = request?.headers['Idempotency-Key'];
  const snippetRequest = request && sentKey && freshKey ? { ...request, headers: { ...request.headers, 'Idempotency-Key': freshKey } } : request;
  const snippet = snippetRequest ? SNIPPET_LANGUAGES.find((l) => l.id === language)!.render(snippetRequest) : '';

  return (
    <section className="inspector" aria-label={label}>
      <div className="inspector-bar">
        <button type="button" className="inspector-toggle" aria-expanded={open} aria-controls={panelId} onClick={() => setOpen(!open)}>
          <span className="inspector-chevron" aria-hidden="true">
            {open ? '▾' : '▸'}
          </span>
          <span className="visually-hidden">{open ? 'Hide' : 'Show'} the partner request: </span>
          <code className="inspector-summary">{summary}</code>
        </button>
        {call?.state === 'pending' && <span className="muted small">sending…</span>}
        {status !== undefined && <span className={`status-chip status-${Math.floor(status / 100)}xx`}>{statusLine(status)}</span>}
        {call?.networkError && <span className="status-chip status-5xx">not reached</span>}
        {call?.durationMs !== undefined && <span className="muted small">{call.durationMs} ms</span>}
        {!call && <span className="muted small">not sent yet</span>}
      </div>
      {open && (
        <div id={panelId} className="inspector-panel">
          {request ? (
            <>
              <h3 className="h-small">Request</h3>
              <pre className="http" tabIndex={0} aria-label="Request">
                {[
                  `${request.method} ${request.url}`,
                  `Authorization: ${maskedAuthorization()}`,
                  ...Object.entries(request.headers).map(([n, v]) => `${n}: ${v}`),
                  ...(request.body !== undefined ? ['', JSON.stringify(request.body, null, 2)] : []),
                ].join('\n')}
              </pre>
            </>
          ) : (
            <>
              <p className="muted small">
                Console only: this view has no partner REST route. The console calls <code>/api/trpc/{call!.path}</code> with your key.
              </p>
              <pre className="json" tabIndex={0}>
                {JSON.stringify(call!.input ?? {}, null, 2)}
              </pre>
            </>
          )}
          {call && call.state !== 'pending' && (
            <>
              <h3 className="h-small">Response</h3>
              {call.networkError ? (
                <p className="muted">{call.networkError}</p>
              ) : (
                <>
                  <p className="small">
                    {status !== undefined && <strong>{statusLine(status)}</strong>}
                    {call.requestId && (
                      <>
                        {' · request_id '}
                        <code className="request-id">{call.requestId}</code> <CopyButton text={call.requestId} label="Copy request_id" />
                      </>
                    )}
                  </p>
                  <pre className="http" tabIndex={0} aria-label="Response">
                    {[
                      ...Object.entries(restHeaders(call, request)).map(([n, v]) => `${n}: ${v}`),
                      ...(call.responseHeaders ? [''] : []),
                      JSON.stringify(call.response, null, 2) ?? '',
                    ].join('\n')}
                  </pre>
                </>
              )}
            </>
          )}
          {request && (
            <>
              <div className="row snippet-bar" role="group" aria-label="Copy as">
                {SNIPPET_LANGUAGES.map((l) => (
                  <button key={l.id} type="button" className={`button small ${language === l.id ? '' : 'ghost'}`} aria-pressed={language === l.id} onClick={() => setLanguage(l.id)}>
                    {l.label}
                  </button>
                ))}
                <CopyButton text={snippet} label={`Copy as ${SNIPPET_LANGUAGES.find((l) => l.id === language)!.label}`} className="button secondary small" />
              </div>
              <pre className="snippet" tabIndex={0} data-language={language} aria-label={`The request as ${language}`}>
                {snippet}
              </pre>
              <p className="muted small">
                The snippets read your key from <code>PARTNER_API_KEY</code>; set it first (<code>export PARTNER_API_KEY=lop_test_…</code>).
              </p>
              {sentKey && (
                <div className="note small idempotency-note" role="group" aria-label="Idempotency-Key of the snippets">
                  {freshKey ? (
                    <p>
                      The snippets use a <strong>fresh Idempotency-Key</strong> (<code>{freshKey}</code>): running one is a new attempt. With the same body it is refused as a
                      duplicate <code>external_order_id</code>; change that to create another order.
                    </p>
                  ) : (
                    <p>
                      The snippets send the <strong>same Idempotency-Key</strong> as {call ? 'this request' : 'the console will'} (<code>{sentKey}</code>): running one
                      {call ? ' replays it and answers the same order (Idempotent-Replayed: true)' : ' after the console has sent it replays that request'}.
                    </p>
                  )}
                  <div className="row">
                    <button type="button" className="button ghost small" onClick={() => setFreshKey(randomId())}>
                      {freshKey ? 'Another fresh key' : 'Use a fresh key'}
                    </button>
                    {freshKey && (
                      <button type="button" className="button ghost small" onClick={() => setFreshKey(null)}>
                        Back to the key sent
                      </button>
                    )}
                  </div>
                </div>
              )}
            </>
          )}
        </div>
      )}
    </section>
  );
}
