/**
 * Bytes of memory shared by tasks that run at once. Each task waits for its share, in order of arrival (a
 * large share is not starved by a stream of small ones); a share larger than the whole waits for all of it
 * and so runs alone.
 */
export class ByteBudget {
  readonly total: number;
  private used = 0;
  private readonly waiting: Array<{ bytes: number; grant: () => void }> = [];

  constructor(total: number) {
    this.total = total;
  }

  /** Runs `task` while holding `bytes` of the budget (at most all of it). */
  async with<T>(bytes: number, task: () => Promise<T>): Promise<T> {
    const share = Math.min(bytes, this.total);
    if (share <= 0) return task();
    await this.acquire(share);
    try {
      return await task();
    } finally {
      this.release(share);
    }
  }

  private acquire(bytes: number): Promise<void> {
    if (this.waiting.length === 0 && this.used + bytes <= this.total) {
      this.used += bytes;
      return Promise.resolve();
    }
    return new Promise((grant) => this.waiting.push({ bytes, grant }));
  }

  private release(bytes: number): void {
    this.used -= bytes;
    while (this.waiting.length > 0 && this.used + this.waiting[0].bytes <= this.total) {
      const next = this.waiting.shift()!;
      this.used += next.bytes;
      next.grant();
    }
  }
}
