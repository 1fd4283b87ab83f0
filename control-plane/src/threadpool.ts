// Imported first by main.ts, before anything touches the libuv thread pool (it is sized on first use).
// sharp's decodes and the file system share that pool; with its default of 4 threads, file reads and
// writes of an ingest wait behind image decoding. Not more than needed: every pool thread that runs libvips
// gets a malloc arena of its own, which holds on to memory.
process.env.UV_THREADPOOL_SIZE ??= '8';
