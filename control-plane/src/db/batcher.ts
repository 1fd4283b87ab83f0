/** One batch's work: an answer for each input, in the same order. */
export type BatchRun<In, Out> = (inputs: In[]) => Promise<Out[]>;

/**
 * Coalesces concurrent calls into one round trip: while one batch is in flight the next gathers, so a
 * busy process pays one statement per batch rather than per call, and an idle one answers at once. A
 * call always joins a batch that starts after it was made, so it sees everything committed before it.
 */
export class Batcher<In, Out> {
  private readonly run: BatchRun<In, Out>;
  private pending: Array<{ input: In; resolve: (output: Out) => void; reject: (error: unknown) => void }> = [];
  private inFlight = false;

  constructor(run: BatchRun<In, Out>) {
    this.run = run;
  }

  submit(input: In): Promise<Out> {
    return new Promise<Out>((resolve, reject) => {
      this.pending.push({ input, resolve, reject });
      if (!this.inFlight) void this.flush();
    });
  }

  /** Runs everything gathered so far as one batch, then whatever gathered meanwhile. */
  private async flush(): Promise<void> {
    this.inFlight = true;
    while (this.pending.length > 0) {
      const batch = this.pending;
      this.pending = [];
      try {
        const outputs = await this.run(batch.map((call) => call.input));
        batch.forEach((call, i) => call.resolve(outputs[i]));
      } catch (error) {
        for (const call of batch) call.reject(error);
      }
    }
    this.inFlight = false;
  }
}
