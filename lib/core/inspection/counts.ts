/** How many nodes hold each value, for an inspection's quorum. */
export class Counts extends Map<string, number> {
  add(value: string): void {
    this.set(value, (this.get(value) ?? 0) + 1);
  }

  /** The values held by at least `quorum` nodes. */
  atLeast(quorum: number): string[] {
    return [...this].filter(([, n]) => n >= quorum).map(([v]) => v);
  }
}
