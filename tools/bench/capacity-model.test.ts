import { describe, expect, it } from 'vitest';
import { DAYS_PER_MONTH, DEFAULT_SETTINGS, perEventRead, predictBytes, project, singlePrimaryLimit, size, type MeasuredFigures, type PartnerMix, type WorkloadCost } from './capacity-model';

const cost = (apiMs: number, workerMs: number, databaseMs: number, walBytes: number): WorkloadCost => ({ apiMs, workerMs, databaseMs, walBytes });

/** Round figures, so every expectation below can be worked out by hand. */
const figures: MeasuredFigures = {
  get: cost(1, 0, 0.5, 0),
  page: cost(21, 0, 6, 0),
  poll: cost(1, 0, 1, 0),
  create: cost(5, 0, 3, 4000),
  eventWrite: cost(10, 0, 2, 2000),
  delivery: cost(1, 4, 5, 3000),
  bytesPerOrder: 2000,
  bytesPerEvent: 1000,
  bytesPerDelivery: 300,
  bytesPerAttempt: 1500,
  eventsPerOrder: 10,
};

// One order a second on average, twice that at the busiest hour.
const mix: PartnerMix = { name: 'test', ordersPerDay: 86_400, clients: 10, pollingClients: 5, pollIntervalSeconds: 10, webhookEndpointsPerClient: 1, readsPerOrder: 3, peakFactor: 2 };

describe('the capacity model', () => {
  it('turns a mix into rates at the busiest hour: creates × events per order, × endpoints; polls do not follow the order rate', () => {
    const s = size(figures, mix);
    expect(s.rates.createsPerSecond).toBeCloseTo(2);
    expect(s.rates.eventWritesPerSecond).toBeCloseTo(18);
    expect(s.rates.deliveriesPerSecond).toBeCloseTo(20);
    expect(s.rates.getsPerSecond).toBeCloseTo(6);
    expect(s.rates.pollsPerSecond).toBeCloseTo(0.5);
    // Half the clients poll: half of the events are read through the stream.
    expect(s.rates.eventsReadPerSecond).toBeCloseTo(10);
  });

  it('sums rate × CPU per unit for each side and divides by the planned utilisation', () => {
    const s = size(figures, mix);
    const u = DEFAULT_SETTINGS.utilisation;
    // writes: 2 creates × 3 ms + 18 events × 2 ms + 20 deliveries × 5 ms = 142 ms a second
    expect(s.cores.databaseWrites).toBeCloseTo(0.142 / u);
    // reads: 6 GETs × 0.5 + 0.5 polls × 1 + 10 events × (6 − 1) / 500 = 3.6 ms a second
    expect(s.cores.databaseReads).toBeCloseTo(0.0036 / u);
    // partners' requests on the API: 2 × 5 + 20 × 1 + 6 × 1 + 0.5 × 1 + 10 × 20 / 500 = 36.9 ms a second
    expect(s.cores.api).toBeCloseTo(0.0369 / u);
    expect(s.cores.laboratory).toBeCloseTo(0.18 / u);
    expect(s.cores.worker).toBeCloseTo(0.08 / u);
    // Two of each process at least (one can fail); the smallest primary is 2 vCPU (its RAM: the next test).
    expect(s.plan).toMatchObject({ apiProcesses: 2, workerProcesses: 2, primaryVcpu: 2 });
  });

  it('scales linearly with the order rate and rounds the primary up to a power of two', () => {
    const small = size(figures, mix);
    const large = size(figures, { ...mix, ordersPerDay: mix.ordersPerDay * 40 });
    expect(large.cores.databaseWrites / small.cores.databaseWrites).toBeCloseTo(40);
    expect(large.storage.historyBytesPerMonth / small.storage.historyBytesPerMonth).toBeCloseTo(40);
    // 40 × 0.142 / 0.6 = 9.47 cores of writes (+ reads) → 16 vCPU
    expect(large.plan.primaryVcpu).toBe(16);
  });

  it('grows the history by orders a day × days a month × (bytes per order + events per order × bytes per event); deliveries stop at the retention window', () => {
    const s = size(figures, mix);
    expect(s.storage.historyBytesPerMonth).toBeCloseTo(86_400 * DAYS_PER_MONTH * (2000 + 10 * 1000));
    expect(s.storage.deliveryBytesRetained).toBeCloseTo(86_400 * 10 * 1 * DEFAULT_SETTINGS.webhookRetentionDays * (300 + DEFAULT_SETTINGS.attemptsPerDelivery * 1500));
    expect(s.wal.bytesPerDay).toBeCloseTo(86_400 * (4000 + 9 * 2000 + 10 * 3000));
    expect(s.wal.peakBytesPerSecond).toBeCloseTo(2 * 4000 + 18 * 2000 + 20 * 3000);
  });

  it('sizes RAM so a day of history and of deliveries fits in half of it', () => {
    const s = size(figures, { ...mix, ordersPerDay: mix.ordersPerDay * 10 });
    const hot = s.storage.hotBytes;
    expect(hot).toBeCloseTo(864_000 * (2000 + 10 * 1000) + 864_000 * 10 * (300 + 1.1 * 1500));
    expect(s.plan.primaryRamGb * 1024 ** 3).toBeGreaterThanOrEqual(2 * hot);
    expect((s.plan.primaryRamGb / 2) * 1024 ** 3).toBeLessThan(2 * hot);
  });

  it('reads one more event in a page for the page cost less an empty poll, per event, never below zero', () => {
    expect(perEventRead(figures)).toEqual({ apiMs: 20 / 500, workerMs: 0, databaseMs: 5 / 500, walBytes: 0 });
    expect(perEventRead({ ...figures, page: cost(0.5, 0, 0.5, 0) }).apiMs).toBe(0);
  });

  it('advises a read replica when reads are at least half of the primary’s CPU and a core’s worth, not for a write-heavy mix', () => {
    expect(size(figures, mix).replica.advised).toBe(false);
    const readHeavy = size(figures, { ...mix, clients: 2000, pollingClients: 2000, pollIntervalSeconds: 1, readsPerOrder: 500 });
    expect(readHeavy.cores.databaseReads).toBeGreaterThan(readHeavy.cores.databaseWrites);
    expect(readHeavy.replica.advised).toBe(true);
  });

  it('puts one primary’s write limit where the largest primary’s CPU or the WAL stream runs out, whichever is first', () => {
    const limit = singlePrimaryLimit(figures, mix);
    // Per order: 3 + 9 × 2 + 10 × 5 = 71 ms of database CPU, 4000 + 9 × 2000 + 10 × 3000 = 52,000 bytes of WAL.
    expect(limit.perOrder.databaseMs).toBeCloseTo(71);
    expect(limit.perOrder.walBytes).toBeCloseTo(52_000);
    expect(limit.ordersPerSecondByCpu).toBeCloseTo((64 * 0.6 * 1000) / 71);
    expect(limit.ordersPerSecondByWal).toBeCloseTo((64 * 1024 * 1024) / 52_000);
    expect(limit.bound).toBe('cpu');
    expect(limit.ordersPerDay).toBeCloseTo((limit.ordersPerSecond * 86_400) / 2);
    const walBound = singlePrimaryLimit(figures, mix, { ...DEFAULT_SETTINGS, walLimitBytesPerSecond: 1024 * 1024 });
    expect(walBound.bound).toBe('wal');
    expect(walBound.ordersPerSecond).toBeCloseTo((1024 * 1024) / 52_000);
  });

  it('predicts storage as rows × bytes per row, and counts the monthly partitions a history spans', () => {
    expect(predictBytes(figures, { orders: 10, events: 100, deliveries: 100, attempts: 110 })).toEqual({ orders: 20_000, events: 100_000, deliveries: 30_000, attempts: 165_000, total: 315_000 });
    const p = project(figures, mix, 1e9, 0.25);
    expect(p.orders).toBeCloseTo(1e8);
    expect(p.historyBytes).toBeCloseTo(1e8 * 2000 + 1e9 * 1000);
    expect(p.eventIndexBytes).toBeCloseTo(1e9 * 1000 * 0.25);
    expect(p.months).toBeCloseTo(1e9 / (86_400 * 10 * DAYS_PER_MONTH));
  });
});
