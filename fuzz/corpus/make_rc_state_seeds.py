#!/usr/bin/env python3
"""Writes the seed programs of fuzz/rc_state_fuzz.cpp into fuzz/corpus/rc_state.

Each seed is a short, meaningful program (register regions on both sides,
post work, deliver, then inject or replay frames) in the fuzzer's input
encoding, so the fuzzer starts from traffic that gets past the first checks.
Re-run after changing the encoding in rc_state_fuzz.cpp.
"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rc_state")

def u16(v): return struct.pack("<H", v & 0xFFFF)
def u32(v): return struct.pack("<I", v & 0xFFFFFFFF)
def u64(v): return struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF)

PROGRESS_A, PROGRESS_B, DELIVER, POST, POST_RECV, REGISTER, DEREGISTER, UNMAP, RECREATE, \
    INJECT_B, INJECT_A, REPLAY, DROP, DUP, POLL, RELEASE = range(16)
OPS = {"write": 0, "write_imm": 1, "send": 2, "send_imm": 3, "read": 4, "fadd": 5, "cas": 6}
ALL = 1 | 2 | 4 | 8

def register(slot, rights=ALL, off=0, length=8191):
    return bytes([REGISTER, slot, rights]) + u16(off) + u16(length)

def va(slot_in_half, offset):            # "default" branch: base + u16 % len
    return bytes([slot_in_half, 3]) + u16(offset)

def key(kind=3):                          # 3: the slot's own key of the right kind
    return bytes([kind])

def post(op, local_slot, remote_slot, length, loff=0, roff=0, fence=0):
    b = bytes([POST, OPS[op]]) + u16(7) + bytes([fence, 0])   # one SGE
    b += va(local_slot, loff) + bytes([1]) + u16(length) + key()
    b += va(remote_slot, roff) + key() + u64(1) + u64(2) + u32(0x1234)
    return b

def post_recv(slot, length):
    return bytes([POST_RECV, 0]) + va(slot, 0) + u16(length) + key() + u16(9)

def deliver(n=1): return bytes([DELIVER]) * n
def poll(): return bytes([POLL])

def inject(to_b, opcode, slot, length, payload_len, psn_delta=0):
    b = bytes([INJECT_B if to_b else INJECT_A, 1, opcode, 0])     # ip id, opcode, live QPN
    b += bytes([(psn_delta * 16) & 0xFF, 1, 0])                   # PSN delta (byte/16), ack_req, pkey ok
    b += va(slot, 0) + bytes([1]) + key()                         # reth va, atomic va aligned, key
    b += bytes([min(length // 37, 0xEF)])                         # reth length
    b += bytes([0]) + u32(0) + u64(1) + u64(0) + u64(0) + u32(0)  # aeth, msn, atomics, imm
    b += u16(payload_len) + bytes([0x42, 0, 0])                   # payload, no corruption
    return b

seeds = {
    "write_read_atomic": register(0) + register(4) + post("write", 0, 0, 3000) + deliver(3)
        + post("read", 1, 0, 5000, loff=0) + deliver(4) + post("fadd", 0, 0, 8) + deliver(3) + poll(),
    "send_recv": register(1) + register(5) + post_recv(1, 4096) + post("send", 1, 1, 2500) + deliver(4) + poll(),
    "dereg_mid_write": register(0) + register(4) + post("write", 0, 0, 8000) + bytes([PROGRESS_A, PROGRESS_B])
        + bytes([DEREGISTER, 0]) + deliver(4) + poll(),
    "unmap_mid_read": register(2) + register(6) + post("read", 2, 2, 8000) + bytes([PROGRESS_A, PROGRESS_B])
        + bytes([UNMAP, 6]) + deliver(4) + poll() + bytes([DEREGISTER, 6]),
    # A WRITE_FIRST lands, the target deregisters, the MIDDLE follows.
    "inject_dereg_mid_write": register(0) + register(4) + inject(True, 0x06, 0, 3000, 1024) + deliver(1)
        + bytes([DEREGISTER, 0]) + inject(True, 0x07, 0, 0, 1024, 1) + deliver(2),
    # The requester's own WRITE, paused after two packets while the target deregisters.
    "pause_dereg_mid_write": register(0) + register(4) + post("write", 0, 0, 8000) + bytes([PROGRESS_A])
        + bytes([RELEASE, 0, 1, PROGRESS_B, DEREGISTER, 0]) + deliver(4) + poll(),
    # The same for a SEND whose receive buffer goes away.
    "pause_dereg_mid_send": register(1) + register(5) + post_recv(1, 8000) + post("send", 1, 1, 6000)
        + bytes([PROGRESS_A, RELEASE, 0, 1, PROGRESS_B, DEREGISTER, 1]) + deliver(4) + poll(),
    "replays": register(0) + register(4) + post("read", 0, 0, 3000) + deliver(1)
        + bytes([REPLAY, 0, 200, REPLAY, 1, 200, REPLAY, 2, 10, 3]) + deliver(3) + poll(),
    "recreate": register(0) + register(4) + post("write", 0, 0, 3000) + bytes([RECREATE, 0])
        + post("write", 0, 0, 100) + deliver(3) + poll(),
}

os.makedirs(OUT, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print(f"wrote {len(seeds)} seeds to {OUT}")
