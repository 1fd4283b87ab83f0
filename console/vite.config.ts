import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// The repository root holds a React 18 copy (for tap); the console bundles only its own React 19.
export default defineConfig({
  plugins: [react()],
  resolve: { dedupe: ['react', 'react-dom'] },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // Hashed file names under /assets/ are cached for a year by the control plane; index.html never.
    assetsDir: 'assets',
    sourcemap: false,
    target: 'es2022',
  },
});
