import { findChromium } from './chromium';

/** Unpacks the npm Chromium (when that is the one used) once, before the test files start side by side. */
export default async function setup(): Promise<void> {
  await findChromium();
}
