import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { generateSigningSecret } from '@lop/contract';
import { describe, expect, it } from 'vitest';
import { buildAsyncApiDocument, deliveryHeaders } from '@lop/domain';
import { verifyWebhook } from './verify-webhook';

const PYTHON_SAMPLE = fileURLToPath(new URL('./verify_webhook.py', import.meta.url));

/** A delivery exactly as our delivery worker signs it, with a real event body. */
function signedDelivery(overrides: { secret?: string; timestamp?: number } = {}) {
  const secret = overrides.secret ?? generateSigningSecret();
  const event = buildAsyncApiDocument().components.messages['result.final'].examples[0].payload;
  const body = JSON.stringify(event);
  const timestamp = overrides.timestamp ?? Math.floor(Date.now() / 1000);
  const headers = deliveryHeaders({ secret, body, timestamp, deliveryId: 'dlv_sample', eventId: event.event_id });
  return { secret, body, headers, event };
}

function runPython(secret: string, headers: Record<string, string>, body: string, now?: number): { ok: boolean; event_id?: string; reason?: string } {
  const result = spawnSync('python3', [PYTHON_SAMPLE], { input: JSON.stringify({ secret, headers, body, now }), encoding: 'utf8' });
  expect(result.status, result.stderr).toBe(0);
  return JSON.parse(result.stdout);
}

describe('webhook verification samples (docs/webhooks.md) accept what our signer sends and nothing else', () => {
  it('TypeScript sample: a genuine delivery verifies and yields the event', () => {
    const { secret, body, headers, event } = signedDelivery();
    expect(verifyWebhook(secret, headers, body)).toEqual(event);
  });

  it('TypeScript sample: a changed body, another secret or a stale timestamp is refused', () => {
    const { secret, body, headers } = signedDelivery();
    expect(() => verifyWebhook(secret, headers, body.replace('final', 'FINAL'))).toThrow('signature mismatch');
    expect(() => verifyWebhook(generateSigningSecret(), headers, body)).toThrow('signature mismatch');
    const stale = signedDelivery({ timestamp: Math.floor(Date.now() / 1000) - 301 });
    expect(() => verifyWebhook(stale.secret, stale.headers, stale.body)).toThrow('tolerance');
    expect(() => verifyWebhook(secret, { ...headers, 'x-partner-signature': undefined }, body)).toThrow('missing');
  });

  it('Python sample: a genuine delivery verifies', () => {
    const { secret, body, headers, event } = signedDelivery();
    expect(runPython(secret, headers, body)).toEqual({ ok: true, event_id: event.event_id });
  });

  it('Python sample: a changed body, another secret or a stale timestamp is refused', () => {
    const { secret, body, headers } = signedDelivery();
    expect(runPython(secret, headers, `${body} `)).toEqual({ ok: false, reason: 'signature mismatch' });
    expect(runPython(generateSigningSecret(), headers, body)).toEqual({ ok: false, reason: 'signature mismatch' });
    expect(runPython(secret, headers, body, Number(headers['x-partner-timestamp']) + 301)).toEqual({ ok: false, reason: 'timestamp outside the tolerance' });
  });

  it('the whsec_… secret is the HMAC key whole: stripping the prefix or base64-decoding the rest (as Svix libraries do) fails, in both samples', () => {
    const { secret, body, headers, event } = signedDelivery();
    expect(secret).toMatch(/^whsec_/);
    const stripped = secret.slice('whsec_'.length);
    const decoded = Buffer.from(stripped, 'base64').toString('latin1');
    for (const wrong of [stripped, decoded]) {
      expect(() => verifyWebhook(wrong, headers, body)).toThrow('signature mismatch');
      expect(runPython(wrong, headers, body)).toEqual({ ok: false, reason: 'signature mismatch' });
    }
    expect(verifyWebhook(secret, headers, body)).toEqual(event);
  });
});
