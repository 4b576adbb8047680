import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// Served by the partner API at {origin}/console; `npm run dev` proxies the API calls (and the /docs reference it links to) to a running `npm start`.
export default defineConfig({
  base: '/console/',
  plugins: [react()],
  // No source maps: the API serves this folder to anyone, and the console's source is not theirs to read.
  build: { outDir: 'dist', emptyOutDir: true, sourcemap: false },
  server: {
    proxy: Object.fromEntries(['/api', '/docs'].map((path) => [path, process.env.PARTNER_API_ORIGIN ?? 'http://127.0.0.1:3000'])),
  },
});
