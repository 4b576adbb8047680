import { PARTNER_BASE_PATH } from '@lop/contract';
import { describe, expect, it } from 'vitest';
import { buildOpenApiDocument, laboratoryCaller } from '@lop/domain';
import { expectError, expectSuccess, ts, uuid } from '../testing/expect-envelope';
import { orderBody } from '../testing/orders';
import { useScene } from '../testing/scene';

/** Exactly the structural fields of the spec's Order exceptions item. */
const EXCEPTION_FIELDS = ['exception_id', 'category', 'severity', 'status', 'owner_role', 'entity_type', 'retryable', 'opened_at', 'resolved_at', 'source'].sort();

describe('GET /v1/orders/{orderId}/exceptions: the canonical model, structural fields only', () => {
  const scene = useScene({ observed: true, client: true });
  const { api, tenant, client, connection } = scene;
  const lab = laboratoryCaller({ db: connection.db });

  const placeOrder = async (): Promise<string> => expectSuccess(await client.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, scene.subject)), 201).order_id;
  const getExceptions = async (orderId: string) => {
    const response = await api.call('GET', `/v1/orders/${orderId}/exceptions`, { key: client.key });
    const data = expectSuccess(response);
    expect(Object.keys(data).sort()).toEqual(['action_required', 'count', 'exceptions', 'order_id']);
    expect(data.count).toBe(data.exceptions.length);
    for (const exception of data.exceptions) {
      expect(Object.keys(exception).sort()).toEqual(EXCEPTION_FIELDS);
      expect(Object.keys(exception.source).sort()).toEqual(['adapter_key', 'domain', 'exception_type']);
      expect(uuid.safeParse(exception.exception_id).success).toBe(true);
      expect(ts.safeParse(exception.opened_at).success).toBe(true);
    }
    return { data, text: response.text };
  };

  it('an order without exceptions: count 0, nothing to act on', async () => {
    const orderId = await placeOrder();
    expect((await getExceptions(orderId)).data).toEqual({ order_id: orderId, count: 0, action_required: false, exceptions: [] });
  });

  it('a rejected specimen: a partner-owned specimen_rejected exception, resolved by the recollection', async () => {
    const orderId = await placeOrder();
    await lab.accept({ order_id: orderId });
    await lab.collect({ order_id: orderId });
    await lab.receive({ order_id: orderId });
    const rejected = await lab.rejectSpecimen({ order_id: orderId, reason: 'hemolyzed' });

    const { data } = await getExceptions(orderId);
    expect(data).toMatchObject({ order_id: orderId, count: 1, action_required: true });
    expect(data.exceptions[0]).toEqual({
      exception_id: rejected.exception.exception_id,
      category: 'specimen_rejected',
      severity: 'error',
      status: 'open',
      owner_role: 'partner',
      entity_type: 'specimen',
      retryable: true,
      opened_at: expect.any(String),
      resolved_at: null,
      source: { exception_type: null, domain: 'specimen', adapter_key: null },
    });
    const order = expectSuccess(await client.get(orderId));
    expect(order).toMatchObject({ lifecycle: 'active', lifecycle_detail: 'recollection_required', next_action: 'recollect_specimen' });
    expect(order.specimens).toMatchObject([{ specimen_id: rejected.specimen.specimen_id, status: 'rejected', rejection_reason: 'hemolyzed' }]);

    const replacement = await lab.collect({ order_id: orderId });
    const after = await getExceptions(orderId);
    expect(after.data).toMatchObject({ count: 1, action_required: false, exceptions: [{ status: 'resolved', resolved_at: expect.any(String) }] });
    expect(after.text).not.toContain('replacement specimen');
    const recollected = expectSuccess(await client.get(orderId));
    expect(recollected.lifecycle_detail).toBe('specimen_collected');
    expect(recollected.specimens.map((s: any) => [s.specimen_id, s.status, s.recollection_of])).toEqual([
      [rejected.specimen.specimen_id, 'rejected', null],
      [replacement.specimen.specimen_id, 'collected', rejected.specimen.specimen_id],
    ]);
  });

  it('newest first; operator notes, resolution text and evidence never appear', async () => {
    const orderId = await placeOrder();
    await lab.transmit({ order_id: orderId });
    const failed = await lab.failTransmission({ order_id: orderId, reason: 'TCP reset by LIS gateway 10.2.3.4', source_exception_type: 'HL7_NAK_AE', source_adapter_key: 'hl7v2-orm' });
    const delayed = await lab.exceptions.open({ order_id: orderId, category: 'result_delayed', operator_notes: 'courier strike, internal ticket OPS-991' });
    await lab.exceptions.resolve({ exception_id: delayed.exception.exception_id, resolution_text: 'Resolved by re-routing via depot B', operator_notes: 'spoke to J. Smith' });

    const { data, text } = await getExceptions(orderId);
    expect(data.exceptions.map((e: any) => e.exception_id)).toEqual([delayed.exception.exception_id, failed.exception.exception_id]);
    // Both are the laboratory's: a failed transmission is its to retry.
    expect(data.action_required).toBe(false);
    expect(data.exceptions[1]).toMatchObject({
      category: 'transmission_failed',
      owner_role: 'laboratory',
      retryable: true,
      entity_type: 'order',
      status: 'open',
      source: { exception_type: 'HL7_NAK_AE', domain: 'transmission', adapter_key: 'hl7v2-orm' },
    });
    expect(data.exceptions[0]).toMatchObject({ category: 'result_delayed', owner_role: 'laboratory', status: 'resolved' });
    for (const secret of ['TCP reset', '10.2.3.4', 'OPS-991', 'courier', 're-routing', 'J. Smith']) expect(text).not.toContain(secret);
    expect(expectSuccess(await client.get(orderId))).toMatchObject({ lifecycle: 'pending', lifecycle_detail: 'transmission_failed', next_action: 'wait_for_laboratory' });
  });

  it('a rejected acknowledgement shows an order_rejected exception', async () => {
    const orderId = await placeOrder();
    await lab.transmit({ order_id: orderId });
    await lab.acknowledge({ order_id: orderId, status: 'rejected', reason: 'retired test code' });
    const { data, text } = await getExceptions(orderId);
    expect(data).toMatchObject({ count: 1, action_required: true, exceptions: [{ category: 'order_rejected', owner_role: 'partner' }] });
    expect(text).not.toContain('retired test code');
  });

  it('next_action names the partner’s action while the partner owns an open exception, on GET order, the events and the console’s list', async () => {
    let page = expectSuccess(await client.events('?limit=500'));
    while (page.has_more) page = expectSuccess(await client.events(`?cursor=${page.next_cursor}&limit=500`));
    const cursor: string = page.next_cursor;
    const orderId = await placeOrder();
    const eventsOfOrder = async () => expectSuccess(await client.events(`?cursor=${cursor}&limit=500`)).events.filter((e: any) => e.data.order_id === orderId);
    const consoleRow = async () => {
      const input = encodeURIComponent(JSON.stringify({ limit: 100 }));
      const response = await api.fetch('GET', `/api/trpc/console.orders?input=${input}`, { headers: { authorization: `Bearer ${client.key}` } });
      expect(response.status, response.text).toBe(200);
      return response.body.result.data.data.orders.find((o: any) => o.order_id === orderId);
    };
    expect(expectSuccess(await client.get(orderId))).toMatchObject({ lifecycle: 'pending', lifecycle_detail: 'received', next_action: 'wait_for_laboratory' });

    const opened = await lab.exceptions.open({ order_id: orderId, category: 'order_information_required' });
    expect((await getExceptions(orderId)).data).toMatchObject({ action_required: true, exceptions: [{ owner_role: 'partner', status: 'open' }] });
    expect(expectSuccess(await client.get(orderId))).toMatchObject({ lifecycle: 'pending', lifecycle_detail: 'received', next_action: 'provide_information' });
    expect(await consoleRow()).toMatchObject({ next_action: 'provide_information' });
    // A laboratory-owned exception on top changes nothing for the partner.
    await lab.exceptions.open({ order_id: orderId, category: 'result_delayed' });
    expect(expectSuccess(await client.get(orderId)).next_action).toBe('provide_information');
    // The laboratory moving the order on does not hide it either.
    await lab.accept({ order_id: orderId });
    expect(expectSuccess(await client.get(orderId))).toMatchObject({ lifecycle: 'active', next_action: 'provide_information' });

    await lab.exceptions.resolve({ exception_id: opened.exception.exception_id, resolution_text: 'Information received' });
    expect(expectSuccess(await client.get(orderId))).toMatchObject({ lifecycle: 'active', next_action: 'collect_specimen' });
    expect(await consoleRow()).toMatchObject({ next_action: 'collect_specimen' });

    // The stream tells the same: the opening event already carries the partner's action; the resolution hands it back.
    expect((await eventsOfOrder()).map((e: any) => [e.type, e.data.next_action, e.data.action_required_code])).toEqual([
      ['order.created', 'wait_for_laboratory', undefined],
      ['integration.action_required', 'provide_information', 'order_information_required'],
      ['order.updated', 'provide_information', undefined],
      ['order.updated', 'collect_specimen', 'none'],
    ]);
  });

  it('an operator may give a laboratory category to the partner: next_action is then resolve_exception', async () => {
    const orderId = await placeOrder();
    await lab.exceptions.open({ order_id: orderId, category: 'collection_delayed', owner_role: 'partner' });
    expect(expectSuccess(await client.get(orderId))).toMatchObject({ next_action: 'resolve_exception' });
  });

  it('needs the orders:read scope', async () => {
    const orderId = await placeOrder();
    expectError(await api.call('GET', `/v1/orders/${orderId}/exceptions`, { key: await tenant.key({ scopes: ['results:read'] }) }), 403, 'forbidden');
  });

  it('the OpenAPI document describes the new routes with their enums and error codes', () => {
    const document: any = buildOpenApiDocument();
    const schemas = document.components.schemas;
    expect(schemas.ExceptionSeverity.enum).toEqual(['info', 'warning', 'error', 'critical']);
    expect(schemas.ExceptionStatus.enum).toEqual(['open', 'resolved']);
    expect(schemas.ResultState.enum).toEqual(['partial', 'final', 'corrected', 'amended']);
    const get = (path: string) => document.paths[`${PARTNER_BASE_PATH}${path}`].get;
    expect(get('/v1/orders/{orderId}/exceptions')['x-required-scope']).toBe('orders:read');
    for (const path of ['/v1/orders/{orderId}/results', '/v1/orders/{orderId}/results/{resultId}', '/v1/orders/{orderId}/results/{resultId}/report', '/v1/orders/{orderId}/results/{resultId}/report/document']) {
      expect(get(path)['x-required-scope'], path).toBe('results:read');
      expect(Object.keys(get(path).responses), path).toContain('404');
    }
    expect(get('/v1/orders/{orderId}/results/{resultId}/report').responses['404'].description).toContain('report_not_modeled');
  });
});
