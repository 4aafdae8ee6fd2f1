use std::io::Read;

use super::*;

#[tokio::test]
async fn the_reserve_takes_a_waiting_connection_closes_it_and_is_kept_again() {
    let (listener, bound) = bind(SocketAddr::from(([127, 0, 0, 1], 0))).await.unwrap();
    let first = std::net::TcpStream::connect(bound).unwrap();
    let mut second = std::net::TcpStream::connect(bound).unwrap();
    // As after an `accept` that failed: the listener is known to be ready.
    let _served = listener.accept().await.unwrap();
    let mut reserve = Reserve::open();
    assert!(reserve.shed(&listener));
    assert!(reserve.0.is_some(), "the reserve was not taken again");
    second
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut got = [0u8; 1];
    assert!(
        matches!(second.read(&mut got), Ok(0) | Err(_)),
        "the shed connection was left open"
    );
    // Nothing more waits: nothing is taken.
    assert!(!reserve.shed(&listener));
    drop(first);
}

#[test]
fn errors_of_one_connection_are_not_waited_out_and_running_out_of_descriptors_is() {
    let error = |n| io::Error::from_raw_os_error(n);
    assert!(gone_already(&error(libc::ECONNABORTED)));
    assert!(!gone_already(&error(libc::EMFILE)));
    assert!(out_of_fds(&error(libc::EMFILE)) && out_of_fds(&error(libc::ENFILE)));
    assert!(!out_of_fds(&error(libc::ENOBUFS)) && !gone_already(&error(libc::ENOBUFS)));
}
