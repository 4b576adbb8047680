// `npm run quickstart:run`: the partner quickstart against the service started on a fresh
// database (CI runs it after the tests, like the newman run).
import { withFreshSandbox } from '../sandbox-service/fresh-sandbox';
import { runQuickstart } from './partner-quickstart';

const code = await withFreshSandbox('quickstart', async (sandbox) => {
  try {
    const report = await runQuickstart({ baseUrl: sandbox.baseUrl, apiKey: sandbox.key, log: (line) => console.log(`  ${line}`) });
    console.log(`quickstart: order ${report.orderId} went through the whole flow`);
    return 0;
  } catch (error) {
    console.error(`quickstart failed: ${error instanceof Error ? error.message : String(error)}`);
    console.error(sandbox.output().slice(-4000));
    return 1;
  }
});
process.exit(code);
