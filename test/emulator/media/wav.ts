/** A short mono 16-bit PCM WAV sine tone: the smallest audio every player accepts. */
export function makeWav(durationSeconds = 0.5, frequency = 440, sampleRate = 22_050): Buffer {
  const sampleCount = Math.round(durationSeconds * sampleRate);
  const dataBytes = sampleCount * 2;
  const wav = Buffer.alloc(44 + dataBytes);

  wav.write('RIFF', 0, 'ascii');
  wav.writeUInt32LE(36 + dataBytes, 4);
  wav.write('WAVE', 8, 'ascii');
  wav.write('fmt ', 12, 'ascii');
  wav.writeUInt32LE(16, 16); // fmt chunk size
  wav.writeUInt16LE(1, 20); // PCM
  wav.writeUInt16LE(1, 22); // mono
  wav.writeUInt32LE(sampleRate, 24);
  wav.writeUInt32LE(sampleRate * 2, 28); // byte rate
  wav.writeUInt16LE(2, 32); // block align
  wav.writeUInt16LE(16, 34); // bits per sample
  wav.write('data', 36, 'ascii');
  wav.writeUInt32LE(dataBytes, 40);

  for (let i = 0; i < sampleCount; i++) {
    // 0.3 amplitude: audible but not harsh.
    const sample = Math.round(Math.sin((2 * Math.PI * frequency * i) / sampleRate) * 0.3 * 32767);
    wav.writeInt16LE(sample, 44 + i * 2);
  }
  return wav;
}
