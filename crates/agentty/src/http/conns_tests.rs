use std::time::Duration;

use super::*;

fn is_evicted(conn: &Conn) -> bool {
    conn.evicted.is_cancelled()
}

#[test]
fn at_the_cap_the_oldest_unproven_connection_makes_room_and_a_proven_one_never_does() {
    let conns = Conns::new(3, 1);
    let (old, _) = conns.admit();
    let (proven, _) = conns.admit();
    proven.prove(&alice());
    let (young, _) = conns.admit();
    let (new, made_room) = conns.admit();
    assert!(made_room);
    assert!(is_evicted(&old) && !is_evicted(&proven) && !is_evicted(&young));
    // The closed one's task drops its place; the next newcomer takes the next oldest unproven.
    drop(old);
    let (_newer, made_room) = conns.admit();
    assert!(made_room && is_evicted(&young) && !is_evicted(&new) && !is_evicted(&proven));
    assert_eq!(
        conns.short_of_fds(10),
        2,
        "only the two unproven ones left are closed"
    );
    assert!(!is_evicted(&proven));
}

#[test]
fn every_place_is_given_back() {
    let conns = Conns::new(2, 1);
    let all: Vec<_> = (0..5).map(|_| conns.admit().0).collect();
    assert_eq!(
        conns.open(),
        5,
        "the closed ones count until their tasks end"
    );
    drop(all);
    assert_eq!(conns.open(), 0);
    assert_eq!(conns.short_of_fds(1), 0);
}

#[tokio::test]
async fn with_every_place_proven_a_newcomer_waits_until_one_closes() {
    let conns = Conns::new(2, 1);
    let (a, _) = conns.admit();
    let (b, _) = conns.admit();
    a.prove(&alice());
    b.prove(&alice());
    let waiting = tokio::spawn({
        let conns = conns.clone();
        async move { conns.room().await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(
        !waiting.is_finished(),
        "room was found at the cap with nothing to close"
    );
    drop(b);
    tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .unwrap()
        .unwrap();
    drop(a);
}

#[tokio::test]
async fn the_accept_loop_does_not_run_ahead_of_the_connections_still_closing() {
    let conns = Conns::new(1, 1);
    let mut closing: Vec<_> = (0..CLOSING_AT_MOST).map(|_| conns.admit().0).collect();
    let (_last, made_room) = conns.admit();
    assert!(made_room);
    assert!(closing.iter().all(|c| c.evicted.is_cancelled()));
    let room = tokio::time::timeout(Duration::from_millis(50), conns.room()).await;
    assert!(
        room.is_err(),
        "room was found with every closed one still open"
    );
    closing.pop();
    tokio::time::timeout(Duration::from_secs(5), conns.room())
        .await
        .unwrap();
}

#[test]
fn short_of_descriptors_the_cap_is_held_below_the_open_connections_until_restored() {
    let conns = Conns::new(100, 1);
    let held: Vec<_> = (0..10).map(|_| conns.admit().0).collect();
    assert_eq!(conns.short_of_fds(3), 3);
    assert_eq!(conns.cap(), 7);
    // A newcomer takes an unproven one's place, not a descriptor freed.
    let (_new, made_room) = conns.admit();
    assert!(made_room);
    assert!(conns.restore_cap());
    assert_eq!(conns.cap(), 100);
    assert!(!conns.restore_cap());
    drop(held);
}

#[test]
fn the_default_cap_is_half_the_descriptors_within_bounds() {
    let cap = default_cap();
    assert!((8..=MAX_CONNECTIONS_DEFAULT).contains(&cap), "{cap}");
}

fn alice() -> Arc<str> {
    Arc::from("alice")
}

#[test]
fn a_caller_proves_its_share_of_the_places_and_no_more_and_closing_gives_them_back() {
    // 32 places among two callers and the operator: a share of 10 each.
    let conns = Conns::new(32, 3);
    let alice_conns: Vec<_> = (0..11).map(|_| conns.admit().0).collect();
    let proven: Vec<bool> = alice_conns.iter().map(|c| c.prove(&alice())).collect();
    assert_eq!(proven.iter().filter(|p| **p).count(), 10, "{proven:?}");
    assert!(!alice_conns[10].is_proven(), "refused, it stays unproven");
    let (bob, _) = conns.admit();
    assert!(bob.prove(&Arc::from("bob")), "another caller still proves");
    drop(alice_conns.into_iter().next());
    let (again, _) = conns.admit();
    assert!(again.prove(&alice()), "a closed one's place is hers again");
    assert!(again.prove(&alice()), "a proven connection stays proven");
}

#[test]
fn a_small_cap_still_gives_each_caller_its_floor() {
    let conns = Conns::new(4, 3);
    let held: Vec<_> = (0..SHARE_FLOOR).map(|_| conns.admit().0).collect();
    assert!(held.iter().all(|c| c.prove(&alice())));
}
