//! [`gen_scenarios!`](crate::gen_scenarios) and [`scenarios!`](crate::scenarios): the
//! fleet scenarios as `#[test]`s for one server.

/// The `gen` scenarios as tests, each on a fresh server from `$start` (an
/// `fn(&str) -> Option<impl Server>`, `None` to skip), one at a time.
#[macro_export]
macro_rules! gen_scenarios {
    ($start:path) => {
        fn on_server(
            name: &str,
            scenario: fn(&mut dyn $crate::scenarios::Server, $crate::scenarios::Open),
        ) {
            let _one = $crate::scenarios::one_at_a_time();
            if let Some(mut server) = $start(name) {
                scenario(&mut server, ::flakeid_stores::open);
            }
        }

        #[test]
        fn eight_processes_race_for_a_pool_of_eight() {
            on_server(
                "race",
                $crate::scenarios::eight_processes_race_for_a_pool_of_eight,
            );
        }

        #[test]
        fn a_holder_paused_past_its_lease_loses_the_id_and_never_overlaps() {
            on_server(
                "pause",
                $crate::scenarios::a_holder_paused_past_its_lease_loses_the_id_and_never_overlaps,
            );
        }

        #[test]
        fn a_killed_holder_is_followed_by_ids_above_all_of_its_own() {
            on_server(
                "kill",
                $crate::scenarios::a_killed_holder_is_followed_by_ids_above_all_of_its_own,
            );
        }

        #[test]
        fn a_new_holder_10s_behind_fails_with_the_distance_then_mints_above() {
            on_server(
                "behind",
                $crate::scenarios::a_new_holder_10s_behind_fails_with_the_distance_then_mints_above,
            );
        }

        #[test]
        fn the_store_stops_and_comes_back_under_a_running_holder() {
            on_server(
                "outage",
                $crate::scenarios::the_store_stops_and_comes_back_under_a_running_holder,
            );
        }

        #[test]
        fn namespaces_are_apart_and_claims_lists_the_holders() {
            on_server(
                "ns",
                $crate::scenarios::namespaces_are_apart_and_claims_lists_the_holders,
            );
        }

        #[test]
        fn when_the_window_runs_out_gen_says_what_happened_and_stops() {
            on_server(
                "window",
                $crate::scenarios::when_the_window_runs_out_gen_says_what_happened_and_stops,
            );
        }
    };
}

/// [`gen_scenarios`], the service's scenarios and the unreachable store.
#[macro_export]
macro_rules! scenarios {
    ($start:path, $scheme:literal) => {
        $crate::gen_scenarios!($start);

        #[test]
        fn serve_readiness_follows_the_store() {
            on_server(
                "serve-ready",
                $crate::serve_fleet::readiness_follows_the_store,
            );
        }

        #[test]
        fn serve_recovers_from_an_outage_past_its_lease_in_process() {
            on_server(
                "serve-outage",
                $crate::serve_fleet::a_server_recovers_from_an_outage_past_its_lease_in_process,
            );
        }

        #[test]
        fn serve_three_servers_under_kill_pause_and_restart() {
            on_server(
                "serve-chaos",
                $crate::serve_chaos::three_servers_under_kill_pause_and_restart,
            );
        }

        #[test]
        fn serve_a_lost_claims_release_never_reaches_the_re_claim() {
            on_server(
                "serve-again",
                $crate::serve_fleet::a_lost_claims_release_never_reaches_the_re_claim,
            );
        }

        #[test]
        fn an_unreachable_store_is_a_clear_error_within_the_bound() {
            let _one = $crate::scenarios::one_at_a_time();
            $crate::scenarios::an_unreachable_store_is_a_clear_error_within_the_bound($scheme);
        }
    };
}
