import { describe, expect, it } from 'vitest';
import { laboratoryCaller } from '@lop/domain';
import { expectSuccess } from '../testing/expect-envelope';
import { orderBody } from '../testing/orders';
import { useScene } from '../testing/scene';

/**
 * A failed order is never a dead end: after every step, what the order, its exceptions and the
 * event stream say agree, and something can move the order on.
 */
describe('failed orders: retryable, owned and cancellable as they say', () => {
  const scene = useScene({ rateLimit: false, client: true });
  const { api, tenant, client, connection } = scene;
  const lab = laboratoryCaller({ db: connection.db });

  /** A new order, and the stream cursor just before it, so its events can be read alone. */
  async function newOrder() {
    let page = expectSuccess(await client.events('?limit=500'));
    while (page.has_more) page = expectSuccess(await client.events(`?cursor=${page.next_cursor}&limit=500`));
    const orderId: string = expectSuccess(await client.create(orderBody(tenant.sandbox.program, tenant.sandbox.item, scene.subject)), 201).order_id;
    return { orderId, cursor: page.next_cursor as string };
  }

  /** Events of one order after `cursor`, as a partner reading only the stream sees them. */
  async function streamOf(orderId: string, cursor: string) {
    const events: { type: string; data: Record<string, any> }[] = [];
    let position = cursor;
    for (;;) {
      const page = expectSuccess(await client.events(`?cursor=${position}&limit=500`));
      events.push(...page.events.filter((e: any) => e.data.order_id === orderId));
      position = page.next_cursor;
      if (!page.has_more) return events;
    }
  }

  /** action_required as a stream-only reader derives it: set by integration.action_required, cleared by action_required_code `none`. */
  const actionRequiredFromStream = (events: { data: Record<string, any> }[]) =>
    events.reduce((required, e) => (e.data.action_required_code === undefined ? required : e.data.action_required_code !== 'none'), false);

  async function expectAgreement(orderId: string, cursor: string) {
    const exceptions = expectSuccess(await api.call('GET', `/v1/orders/${orderId}/exceptions`, { key: client.key }));
    expect(actionRequiredFromStream(await streamOf(orderId, cursor))).toBe(exceptions.action_required);
    return exceptions;
  }

  it('transmission_failed: pending and the laboratory’s to retry; retransmitting resolves it and the order goes on', async () => {
    const { orderId, cursor } = await newOrder();
    await lab.transmit({ order_id: orderId });
    await lab.failTransmission({ order_id: orderId, reason: 'interface engine timeout' });

    expect(expectSuccess(await client.get(orderId))).toMatchObject({
      lifecycle: 'pending',
      lifecycle_detail: 'transmission_failed',
      next_action: 'wait_for_laboratory',
      transmission: { status: 'failed', attempt_no: 1 },
    });
    const failed = await expectAgreement(orderId, cursor);
    expect(failed).toMatchObject({ action_required: false, count: 1, exceptions: [{ category: 'transmission_failed', status: 'open', owner_role: 'laboratory', retryable: true }] });
    // Nothing in the stream asked the partner to act, and no event repeated a state it had already shown.
    expect((await streamOf(orderId, cursor)).map((e) => e.type)).toEqual(['order.created']);

    await lab.transmit({ order_id: orderId });
    expect(expectSuccess(await client.get(orderId))).toMatchObject({ lifecycle_detail: 'transmitted', transmission: { status: 'sent', attempt_no: 2 } });
    expect(await expectAgreement(orderId, cursor)).toMatchObject({ action_required: false, exceptions: [{ category: 'transmission_failed', status: 'resolved' }] });

    await lab.acknowledge({ order_id: orderId, status: 'accepted' });
    expect((await streamOf(orderId, cursor)).map((e) => [e.type, e.data.lifecycle, e.data.next_action])).toEqual([
      ['order.created', 'pending', 'wait_for_laboratory'],
      ['order.updated', 'active', 'collect_specimen'],
    ]);
  });

  it('the partner may cancel while the laboratory retries a failed transmission, on either door; the exception is resolved with the order', async () => {
    for (const door of ['rest', 'trpc'] as const) {
      const { orderId, cursor } = await newOrder();
      await lab.failTransmission({ order_id: orderId });
      const response =
        door === 'rest'
          ? await client.cancel(orderId)
          : await api.fetch('POST', '/api/trpc/orders.cancel', { json: { orderId }, headers: { authorization: `Bearer ${client.key}` } });
      expect(response.status, `${door}: ${response.text}`).toBe(200);
      expect(expectSuccess(await client.get(orderId))).toMatchObject({ lifecycle: 'cancelled', lifecycle_detail: 'cancelled_by_partner', next_action: 'none' });
      expect(await expectAgreement(orderId, cursor), door).toMatchObject({ action_required: false, exceptions: [{ category: 'transmission_failed', status: 'resolved' }] });
      // The laboratory-owned exception never asked the partner to act, so the cancellation has nothing to clear.
      const last = (await streamOf(orderId, cursor)).at(-1)!;
      expect(last.type).toBe('order.cancelled');
      expect(last.data).not.toHaveProperty('action_required_code');
    }
  });

  it('rejected_by_laboratory: the partner reads why and closes it by cancelling; the stream clears action_required', async () => {
    const { orderId, cursor } = await newOrder();
    await lab.transmit({ order_id: orderId });
    await lab.acknowledge({ order_id: orderId, status: 'rejected', reason: 'test code retired' });

    expect(expectSuccess(await client.get(orderId))).toMatchObject({ lifecycle: 'failed', lifecycle_detail: 'rejected_by_laboratory', next_action: 'resolve_exception' });
    expect(await expectAgreement(orderId, cursor)).toMatchObject({
      action_required: true,
      exceptions: [{ category: 'order_rejected', status: 'open', owner_role: 'partner', retryable: false }],
    });

    const cancelled = expectSuccess(await client.cancel(orderId));
    expect(cancelled).toMatchObject({ lifecycle: 'cancelled', lifecycle_detail: 'cancelled_by_partner', next_action: 'none' });
    expect(await expectAgreement(orderId, cursor)).toMatchObject({ action_required: false, exceptions: [{ category: 'order_rejected', status: 'resolved' }] });
    expect((await streamOf(orderId, cursor)).map((e) => [e.type, e.data.lifecycle, e.data.next_action, e.data.action_required_code])).toEqual([
      ['order.created', 'pending', 'wait_for_laboratory', undefined],
      // It shows the new lifecycle and next_action itself: no order.updated repeats them.
      ['integration.action_required', 'failed', 'resolve_exception', 'order_rejected'],
      ['order.cancelled', 'cancelled', 'none', 'none'],
    ]);
  });

  it('the laboratory resolving a partner exception is in the stream: order.updated with action_required_code none', async () => {
    const { orderId, cursor } = await newOrder();
    const opened = await lab.exceptions.open({ order_id: orderId, category: 'order_information_required' });
    expect((await expectAgreement(orderId, cursor)).action_required).toBe(true);
    await lab.exceptions.resolve({ exception_id: opened.exception.exception_id, resolution_text: 'The clinic sent it.' });
    expect((await expectAgreement(orderId, cursor)).action_required).toBe(false);
    expect((await streamOf(orderId, cursor)).at(-1)).toMatchObject({
      type: 'order.updated',
      data: { lifecycle: 'pending', next_action: 'wait_for_laboratory', action_required_code: 'none', links: { exceptions: `/v1/orders/${orderId}/exceptions` } },
    });
  });
});
