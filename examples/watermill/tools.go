package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
)

// saramaConfig is the configuration of the smoke helpers' own Kafka
// clients (not Watermill's).
func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_1_0_0
	cfg.ClientID = "watermill-example-tools"
	return cfg
}

// runTopic creates the Kafka topic.
func runTopic(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("topic", `Creates the Kafka topic with --partitions partitions (replication 1); a
topic that exists already is left as it is. Watermill's Kafka publisher does
not create topics, and neither does the embedded broker.

Example:
  watermill-example topic --brokers 127.0.0.1:9092 --topic orders --partitions 4`, stderr)
	var kf kafkaFlags
	kf.register(fs)
	partitions := fs.Int("partitions", 4, "`number` of partitions")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	brokers, err := kf.check()
	if err == nil && *partitions < 1 {
		err = fmt.Errorf("%w: --partitions must be at least 1", errUsage)
	}
	if err == nil {
		err = createTopic(brokers, kf.topic, int32(*partitions))
	}
	if err == nil {
		fmt.Fprintf(stdout, "topic %s ready\n", kf.topic)
	}
	return exitCode(stderr, "topic", err)
}

func createTopic(brokers []string, topic string, partitions int32) error {
	adm, err := sarama.NewClusterAdmin(brokers, saramaConfig())
	if err != nil {
		return fmt.Errorf("kafka admin: %w", err)
	}
	defer adm.Close()
	err = adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false)
	if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	return nil
}

// runLoad sends POST /orders concurrently.
func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("load", `Sends --requests POST /orders to the service from --concurrency workers, each
with its own Idempotency-Key and Correlation-ID (<run>-<n>), and prints how
they were answered. Exit 1 when any request was not answered 201.

Example:
  watermill-example load --url http://127.0.0.1:8080 --requests 200 --concurrency 8`, stderr)
	url := fs.String("url", "http://127.0.0.1:8080", "the service's base `URL`")
	requests := fs.Int("requests", 200, "`number` of orders")
	concurrency := fs.Int("concurrency", 4, "concurrent `writers`")
	runID := fs.String("run", "", "`token` prefixed to every key (default: random)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *requests < 1 || *concurrency < 1 {
		return exitCode(stderr, "load", fmt.Errorf("%w: --requests and --concurrency must be at least 1", errUsage))
	}
	if *runID == "" {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		*runID = hex.EncodeToString(b)
	}
	start := time.Now()
	created, replayed, failed := sendOrders(ctx, *url, *runID, *requests, *concurrency, stderr)
	fmt.Fprintf(stdout, "load %s: %d requests from %d writers in %.1fs: %d created, %d replayed, %d failed\n",
		*runID, *requests, *concurrency, time.Since(start).Seconds(), created, replayed, failed)
	if created != int64(*requests) {
		return 1
	}
	return 0
}

// sendOrders sends requests 1..n from workers goroutines.
func sendOrders(ctx context.Context, url, runID string, n, workers int, stderr io.Writer) (created, replayed, failed int64) {
	client := &http.Client{Timeout: 30 * time.Second}
	var next atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(n) && ctx.Err() == nil; i = next.Add(1) {
				token := runID + "-" + strconv.FormatInt(i, 10)
				status, err := postOrder(ctx, client, url, token, i)
				switch {
				case err == nil && status == http.StatusCreated:
					atomic.AddInt64(&created, 1)
				case err == nil && status == http.StatusOK:
					atomic.AddInt64(&replayed, 1)
				default:
					atomic.AddInt64(&failed, 1)
					mu.Lock()
					fmt.Fprintf(stderr, "request %s: status %d, %v\n", token, status, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return created, replayed, failed
}

func postOrder(ctx context.Context, client *http.Client, url, token string, i int64) (int, error) {
	body, _ := json.Marshal(orderRequest{SKU: "s-" + strconv.FormatInt(i%16, 10), Qty: 1, Note: token})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/orders", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", token)
	req.Header.Set("Correlation-ID", token)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}
