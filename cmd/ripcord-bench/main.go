// Command ripcord-bench measures ripcord's webhook intake against two
// baselines with one loader: (a) a bare handler that only verifies the HMAC,
// (b) go-githubapp's dispatcher with a no-op handler, (c) `ripcord serve` on
// SQLite and (d) on PostgreSQL. All traffic stays on loopback; every phase is
// bounded in time or count.
//
//	ripcord-bench ingest --ripcord ./bin/ripcord [--postgres URL] [--duration 5s] [--rounds 5]
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
)

func main() {
	if len(os.Args) >= 2 && os.Args[1] == "baseline" {
		if err := runBaseline(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "ripcord-bench baseline:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) < 2 || os.Args[1] != "ingest" {
		fmt.Fprintln(os.Stderr, "usage: ripcord-bench ingest --ripcord PATH [--postgres URL] [--duration 5s] [--rounds 5] [--concurrency 32] [--rss-deliveries 100000]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("ingest", flag.ExitOnError)
	opts := options{}
	fs.StringVar(&opts.binary, "ripcord", "bin/ripcord", "the ripcord binary to run as `ripcord serve`")
	fs.StringVar(&opts.postgres, "postgres", os.Getenv("RIPCORD_TEST_POSTGRES"), "admin URL of a PostgreSQL server for (d); empty skips (d)")
	fs.DurationVar(&opts.duration, "duration", 5*time.Second, "how long each scenario is loaded, in all")
	fs.IntVar(&opts.rounds, "rounds", 5, "the scenarios are loaded in turn, this many times each, duration/rounds at a time")
	fs.IntVar(&opts.concurrency, "concurrency", 32, "concurrent connections of the loader")
	fs.IntVar(&opts.bodyBytes, "body", 12<<10, "size of each signed delivery body (a check_suite payload; at least its ~5.5 kB base)")
	fs.IntVar(&opts.rssDeliveries, "rss-deliveries", 100_000, "deliveries sent to (c) before its RSS is read again; 0 skips")
	fs.StringVar(&opts.url, "url", "", "load only this running server's hook URL (signed with secret bench-secret) and exit")
	_ = fs.Parse(os.Args[2:])
	if opts.url != "" {
		fmt.Println(load("given server", opts.url, opts.concurrency, opts.duration, 0, body(opts.bodyBytes)))
		return
	}
	if err := runIngest(opts); err != nil {
		fmt.Fprintln(os.Stderr, "ripcord-bench:", err)
		os.Exit(1)
	}
}
