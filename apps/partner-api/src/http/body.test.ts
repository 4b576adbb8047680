import { execFile } from 'node:child_process';
import { connect } from 'node:net';
import { PARTNER_BASE_PATH } from '@lop/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '@lop/db';
import { testDatabaseUrl } from '@lop/testing';
import { startAppOver, type CapturedLog, type TestApi } from '../testing/harness';
import { DISCARD_LIMIT_BYTES } from './body';

/** The body limit on a real server on 127.0.0.1 (no key needed: an oversized body is answered before authentication). */
let api: TestApi & { log: CapturedLog };

beforeAll(async () => {
  api = await startAppOver(connectDatabase(testDatabaseUrl(), { max: 1 }));
});
afterAll(() => api?.close());

const DOORS = [`${PARTNER_BASE_PATH}/v1/orders`, '/api/trpc/orders.create'];

/**
 * Node's fetch POSTing a 5 MB body `times` times, from a process of its own (as a partner's
 * client runs; in this process the server's and the client's turns interleave too neatly to show
 * a reset). Each try's status, or its failure's code.
 */
function fetchFromAnotherProcess(url: string, times: number): Promise<(number | string)[]> {
  const script = `
    const body = JSON.stringify({ pad: 'x'.repeat(5 * 1024 * 1024) });
    const outcomes = [];
    for (let i = 0; i < ${times}; i++) {
      try {
        const response = await fetch(process.argv[1], { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        const error = (await response.json()).error;
        outcomes.push(response.status + ' ' + error.code);
      } catch (error) {
        outcomes.push(error.cause?.code ?? error.message);
      }
    }
    console.log(JSON.stringify(outcomes));`;
  return new Promise((resolve, reject) =>
    execFile(process.execPath, ['--input-type=module', '-e', script, url], (error, stdout) => (error ? reject(error) : resolve(JSON.parse(stdout)))),
  );
}

describe('a body over the 100 KB limit', () => {
  // Answered before the client has finished sending: the connection must stay readable until it
  // has, or the client's next write meets a reset and it never reads the answer.
  for (const path of DOORS) {
    it(`${path}: Node's fetch reads the 413 payload_too_large on every try`, async () => {
      expect(await fetchFromAnotherProcess(api.url + path, 8)).toEqual(Array(8).fill('413 payload_too_large'));
    });
  }

  it('a client that keeps sending is read only up to a bound, then its connection is closed', async () => {
    const socket = connect(Number(new URL(api.url).port), '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.on('error', () => undefined);
    socket.write(`POST ${DOORS[0]} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${10 * DISCARD_LIMIT_BYTES}\r\n\r\n`);
    const chunk = Buffer.alloc(64 * 1024, 'x');
    let sent = 0;
    let open = true;
    void closed.then(() => (open = false));
    while (open && sent < 10 * DISCARD_LIMIT_BYTES) {
      if (!socket.write(chunk)) await new Promise((resolve) => socket.once('drain', resolve).once('close', resolve));
      sent += chunk.length;
    }
    await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).toContain('"payload_too_large"');
    expect(sent).toBeLessThan(2 * DISCARD_LIMIT_BYTES);
  });
});

describe('a request the client aborts while sending its body', () => {
  /** Headers and part of the body, then the client goes away. */
  async function abortMidBody(path: string): Promise<void> {
    const socket = connect(Number(new URL(api.url).port), '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"external_order_id":`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    socket.destroy();
  }

  for (const path of DOORS) {
    it(`${path}: is logged once, at info level, as 499 (the client's doing), never as a 500 with a stack`, async () => {
      const since = api.log.lines.length;
      await abortMidBody(path);
      let lines: Record<string, any>[] = [];
      for (let i = 0; i < 100 && !lines.some((line) => line.req?.path === path); i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        lines = api.log.lines.slice(since);
      }
      // Anything else the abort writes would come at once.
      await new Promise((resolve) => setTimeout(resolve, 100));
      lines = api.log.lines.slice(since);
      expect(lines.filter((line) => line.level >= 40)).toEqual([]);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({ level: 30, msg: 'request aborted', req: { method: 'POST', path }, res: { status: 499 } });
    });
  }
});
