import { beforeAll, describe, expect, it } from 'vitest';
import { laboratoryCaller } from '@lop/domain';
import { buildTenant } from '@lop/testing';
import { expectError, expectSuccess } from '../testing/expect-envelope';
import { orderBody } from '../testing/orders';
import { useScene } from '../testing/scene';

/**
 * Every order, exceptions, result and report path of one sandbox order, answered 200 for its own
 * key and 404 (never 403, never a hint) for every other client's and environment's key.
 */
describe('tenancy of the order read side: other clients and environments get 404 on every path', () => {
  const scene = useScene({ observed: true, client: true });
  const { api, tenant, client, connection, fixtures: f } = scene;
  const lab = laboratoryCaller({ db: connection.db });
  const paths: Record<string, string> = {};
  const strangers: Record<string, string> = {};
  let ids: string[] = [];

  beforeAll(async () => {
    const { subject } = scene;
    const orderId = expectSuccess(await client.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, subject)), 201).order_id;
    await lab.accept({ order_id: orderId });
    await lab.collect({ order_id: orderId });
    await lab.receive({ order_id: orderId });
    await lab.rejectSpecimen({ order_id: orderId, reason: 'clotted' });
    await lab.collect({ order_id: orderId });
    await lab.receive({ order_id: orderId });
    await lab.accession({ order_id: orderId });
    const recorded = await lab.recordResult({
      order_id: orderId,
      source_result_id: 'R-1',
      performing_laboratory_system: 'LIS',
      observations: [{ analyte: 'A1c', value: '5.4', unit: '%' }],
      report: { content_type: 'application/pdf', content_base64: 'JVBERi0xLjQK' },
    });
    const resultId = recorded.result.result_id;
    await lab.releaseResult({ result_id: resultId, as: 'final' });
    const report = expectSuccess(await api.call('GET', `/v1/orders/${orderId}/results/${resultId}/report`, { key: scene.key }));

    paths['GET /v1/orders/{orderId}'] = `/v1/orders/${orderId}`;
    paths['GET /v1/orders/{orderId}/exceptions'] = `/v1/orders/${orderId}/exceptions`;
    paths['GET /v1/orders/{orderId}/results'] = `/v1/orders/${orderId}/results`;
    paths['GET /v1/orders/{orderId}/results/{resultId}'] = `/v1/orders/${orderId}/results/${resultId}`;
    paths['GET /v1/orders/{orderId}/results/{resultId}/fhir'] = `/v1/orders/${orderId}/results/${resultId}/fhir`;
    paths['GET /v1/orders/{orderId}/results/{resultId}/report'] = `/v1/orders/${orderId}/results/${resultId}/report`;
    paths['GET …/report/document (retrieval path)'] = report.report.retrieval_path;

    const other = await buildTenant(f);
    const secondClient = await f.client(tenant.laboratory.id);
    await f.grant(secondClient.client_id, tenant.sandbox.program);
    strangers['another client of the same laboratory, same program'] = await f.key(secondClient.client_id, 'sandbox');
    strangers["another laboratory's client"] = await other.key();
    strangers["the same client's production key"] = await tenant.key({ environment: 'production' });
    ids = [orderId, resultId, tenant.clientId, tenant.laboratory.id];
  });

  it('the own key reads every path (control)', async () => {
    for (const [name, path] of Object.entries(paths)) expect((await api.call('GET', path, { key: scene.key })).status, name).toBe(200);
  });

  const cases = () => Object.keys(paths).flatMap((route) => Object.keys(strangers).map((who) => ({ route, who })));
  it('404 not_found for every other key, naming nothing of the order', async () => {
    const all = cases();
    expect(all).toHaveLength(21);
    for (const { route, who } of all) {
      const response = await api.call('GET', paths[route], { key: strangers[who] });
      expectError(response, 404, 'not_found');
      for (const id of ids) expect(response.text, `${route} for ${who}`).not.toContain(id);
    }
  });

  it('a malformed order or result id is 404 like an unknown one', async () => {
    const resultPath = paths['GET /v1/orders/{orderId}/results/{resultId}'];
    const [, , , orderId, , resultId] = resultPath.split('/');
    for (const path of [`/v1/orders/not-a-uuid/exceptions`, `/v1/orders/not-a-uuid/results`, `/v1/orders/${orderId}/results/nope`, `/v1/orders/${orderId}/results/nope/report`, `/v1/orders/x/results/${resultId}/report`, `/v1/orders/${orderId}/results/nope/fhir`, `/v1/orders/x/results/${resultId}/fhir`]) {
      expectError(await api.call('GET', path, { key: scene.key }), 404, 'not_found');
    }
  });
});
