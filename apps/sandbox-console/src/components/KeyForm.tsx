import { useId, useState, type FormEvent } from 'react';

export function KeyForm({ onSubmit, problem }: { onSubmit: (key: string, share: boolean) => Promise<void>; problem: string | null }) {
  const [key, setKey] = useState('');
  const [share, setShare] = useState(false);
  const shareId = useId();
  const [busy, setBusy] = useState(false);
  const inputId = useId();
  const hintId = useId();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const trimmed = key.trim();
    if (!trimmed) return;
    setBusy(true);
    try {
      await onSubmit(trimmed, share);
    } finally {
      setBusy(false);
    }
  };

  return (
    <main className="gate">
      <div className="gate-card">
        <p className="eyebrow">Laboratory ordering partner API</p>
        <h1>Sandbox console</h1>
        <p className="lede">
          Try the API end to end with synthetic orders: create an order from a fixture, run a scenario, and watch its events and results arrive.
        </p>
        <form onSubmit={submit} className="stack">
          <label htmlFor={inputId}>Sandbox API key</label>
          <input
            id={inputId}
            name="api-key"
            type="password"
            autoComplete="off"
            spellCheck={false}
            placeholder="lop_test_…"
            value={key}
            onChange={(e) => setKey(e.target.value)}
            aria-describedby={hintId}
            aria-invalid={problem ? true : undefined}
            required
            autoFocus
          />
          <p id={hintId} className="muted small">
            <code>npm start</code> prints one. The key stays in this tab’s session storage and is sent only to this API.
          </p>
          <label className="checkbox" htmlFor={shareId}>
            <input id={shareId} type="checkbox" checked={share} onChange={(e) => setShare(e.target.checked)} />
            <span>
              Share it with my other console tabs <span className="muted small">(handed from tab to tab while one is open; never written to disk)</span>
            </span>
          </label>
          {problem && (
            <p className="form-error" role="alert">
              {problem}
            </p>
          )}
          <div>
            <button type="submit" className="button" disabled={busy}>
              {busy ? 'Checking…' : 'Open the console'}
            </button>
          </div>
        </form>
      </div>
    </main>
  );
}
