// What the differential scripts share: their command-line options and a
// seeded generator, so that one seed always writes the same documents.

// options reads `--name value` pairs from the command line.
export function options(argv = process.argv.slice(2)) {
  return (name, dflt) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : dflt;
  };
}

// generator is mulberry32 from a 32-bit seed: small, fast and the same on
// every Node.js, which is all a generated corpus needs.
export function generator(seed) {
  let s = seed >>> 0;
  const rnd = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n) => Math.floor(rnd() * n);
  return { rnd, int, pick: (a) => a[int(a.length)], chance: (p) => rnd() < p };
}
