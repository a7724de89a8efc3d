//! A message that announces a payload of 8 GiB and sends none of it costs no memory: the reader
//! grows its buffer with what arrives. This test binary runs with its address space capped at
//! 2 GiB (its own process, one test), so allocating what the peer announced would fail.

use rla_torch::wire;

#[test]
fn an_announced_payload_is_not_allocated_before_it_comes() {
    let cap = libc::rlimit {
        rlim_cur: 2 << 30,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: setrlimit(2) with a valid struct; it only lowers this process's soft limit
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &cap) }, 0);
    let h = br#"{"arrays":[{"name":"x","dtype":"f32","shape":[2147483648]}]}"#;
    let mut forged = b"RLAW".to_vec();
    forged.extend((h.len() as u32).to_le_bytes());
    forged.extend((8u64 << 30).to_le_bytes());
    forged.extend(h);
    forged.extend([0u8; 64]);
    let e = wire::read(&mut forged.as_slice()).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof, "{e}");
    assert!(
        e.to_string().contains("after 64 of 8589934592 bytes"),
        "{e}"
    );
}
