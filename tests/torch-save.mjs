// torch.save files made in the tests (no torch): a state dict's pickle as torch.save writes it (protocol
// 2: an OrderedDict of _rebuild_tensor_v2 calls, each on its own FloatStorage by persistent id) in a zip
// of stored entries (<archive>/data.pkl, <archive>/data/<i>, <archive>/version), written with each
// storage's bytes left a hole: a 1.4 GB file that takes no disk.
import { closeSync, ftruncateSync, openSync, writeSync } from "node:fs";

const str = (s) => {
  const b = Buffer.from(s, "utf8");
  const n = Buffer.alloc(5);
  n.write("X", 0, "latin1");
  n.writeUInt32LE(b.length, 1);
  return Buffer.concat([n, b]);
};
const int = (v) => {
  const b = Buffer.alloc(5);
  b.write("J", 0, "latin1");
  b.writeInt32LE(v, 1);
  return b;
};
const raw = (s) => Buffer.from(s, "latin1");
const tuple = (xs) => Buffer.concat([raw("("), ...xs.map(int), raw("t")]);

/** The pickle of {key: tensor} for `tensors` ([key, "F32", shape] in order), storage i for tensor i. */
export function stateDictPickle(tensors) {
  const parts = [raw("\x80\x02ccollections\nOrderedDict\n)R(")];
  tensors.forEach(([key, , shape], i) => {
    const numel = shape.reduce((a, b) => a * b, 1);
    const stride = shape.map((_, k) => shape.slice(k + 1).reduce((a, b) => a * b, 1));
    const pid = Buffer.concat([raw("("), str("storage"), raw("ctorch\nFloatStorage\n"), str(String(i)), str("cpu"), int(numel), raw("tQ")]);
    parts.push(str(key), raw("ctorch._utils\n_rebuild_tensor_v2\n("), pid, int(0), tuple(shape), tuple(stride), raw("\x89ccollections\nOrderedDict\n)RtR"));
  });
  parts.push(raw("u."));
  return Buffer.concat(parts);
}

function header(signature, name, size, at) {
  const central = signature === 0x02014b50;
  const b = Buffer.alloc(central ? 46 : 30);
  let o = 0;
  const put = (v, n) => {
    b.writeUIntLE(v, o, n);
    o += n;
  };
  put(signature, 4);
  if (central) put(20, 2);
  put(20, 2), put(0, 2), put(0, 2), put(0, 4), put(0, 4), put(size, 4), put(size, 4), put(Buffer.byteLength(name), 2), put(0, 2);
  if (central) put(0, 2), put(0, 2), put(0, 2), put(0, 4), put(at, 4);
  return Buffer.concat([b, Buffer.from(name)]);
}

/** The zip's end of central directory record: `count` entries, a directory of `size` bytes at `at`. */
function endRecord(count, size, at) {
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(count, 8);
  end.writeUInt16LE(count, 10);
  end.writeUInt32LE(size, 12);
  end.writeUInt32LE(at, 16);
  return end;
}

/**
 * Writes `tensors` ([key, "F32", shape]) as a torch.save file at `file`: every header written, every
 * storage's bytes a hole (zeros the disk does not hold). Returns the file's size.
 */
export function sparseTorchSave(file, tensors, archive = "archive") {
  const entries = [[`${archive}/data.pkl`, stateDictPickle(tensors)]];
  tensors.forEach(([, , shape], i) => entries.push([`${archive}/data/${i}`, shape.reduce((a, b) => a * b, 1) * 4]));
  entries.push([`${archive}/version`, Buffer.from("3\n")]);
  const fd = openSync(file, "w");
  const directory = [];
  let at = 0;
  for (const [name, data] of entries) {
    const size = typeof data === "number" ? data : data.length;
    const local = header(0x04034b50, name, size, at);
    writeSync(fd, local, 0, local.length, at);
    if (typeof data !== "number") writeSync(fd, data, 0, data.length, at + local.length);
    directory.push(header(0x02014b50, name, size, at));
    at += local.length + size;
  }
  const cd = Buffer.concat(directory);
  const end = endRecord(entries.length, cd.length, at);
  ftruncateSync(fd, at);
  writeSync(fd, Buffer.concat([cd, end]), 0, cd.length + 22, at);
  closeSync(fd);
  return at + cd.length + 22;
}

/** A torch.save-shaped zip in memory holding `pickle` as archive/data.pkl (and archive/version), every entry stored. */
export function pickleZip(pickle) {
  const entries = [["archive/data.pkl", pickle], ["archive/version", Buffer.from("3\n")]];
  const parts = [];
  const directory = [];
  let at = 0;
  for (const [name, data] of entries) {
    const local = header(0x04034b50, name, data.length, at);
    parts.push(local, data);
    directory.push(header(0x02014b50, name, data.length, at));
    at += local.length + data.length;
  }
  const cd = Buffer.concat(directory);
  const end = endRecord(entries.length, cd.length, at);
  return Buffer.concat([...parts, cd, end]);
}
