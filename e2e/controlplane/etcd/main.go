// Command etcd is a single-member etcd on loopback for the e2e control plane:
// go.etcd.io/etcd/server/v3/embed with a data dir given by the launcher (a temp
// folder), no TLS (it listens on 127.0.0.1 only), fsync off (test data).
// It prints "etcd ready" once it serves and stops on SIGINT or SIGTERM.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func main() {
	dataDir := flag.String("data-dir", "", "data directory (required)")
	client := flag.String("client-url", "http://127.0.0.1:2379", "client URL to listen on")
	peer := flag.String("peer-url", "http://127.0.0.1:2380", "peer URL to listen on")
	flag.Parse()
	if *dataDir == "" {
		log.Fatal("etcd: -data-dir is required")
	}
	clientURL, err := url.Parse(*client)
	if err != nil {
		log.Fatalf("etcd: -client-url: %v", err)
	}
	peerURL, err := url.Parse(*peer)
	if err != nil {
		log.Fatalf("etcd: -peer-url: %v", err)
	}

	cfg := embed.NewConfig()
	cfg.Name = "e2e"
	cfg.Dir = *dataDir
	cfg.ListenClientUrls = []url.URL{*clientURL}
	cfg.AdvertiseClientUrls = []url.URL{*clientURL}
	cfg.ListenPeerUrls = []url.URL{*peerURL}
	cfg.AdvertisePeerUrls = []url.URL{*peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.UnsafeNoFsync = true
	cfg.LogLevel = "warn"

	server, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatalf("etcd: %v", err)
	}
	defer server.Close()
	select {
	case <-server.Server.ReadyNotify():
		fmt.Println("etcd ready")
	case <-time.After(60 * time.Second):
		server.Server.Stop()
		log.Fatal("etcd: not ready after 60 s")
	}

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	select {
	case sig := <-stop:
		log.Printf("etcd: %v, stopping", sig)
	case err := <-server.Err():
		log.Fatalf("etcd: %v", err)
	}
}
