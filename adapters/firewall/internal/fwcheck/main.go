// Command fwcheck is the firewall integration test's helper, run inside the
// test containers (it is not shipped):
//
//	fwcheck install <uid>                 Open, Install and Verify, then print both families' listings
//	fwcheck dial <addr>                   connect over TCP; exit 0 only when connected
//	fwcheck resolve <udp|tcp> <server> <name>
//	                                      look name up at server over that transport
//	fwcheck loopback <ip>                 listen on ip:0 and connect to it
//	fwcheck serve <addr>                  accept TCP connections forever
//
// Every network step has a short timeout: a refused connection must fail at
// once (REJECT), and nothing may hang the test.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/sandgate/sandgate/adapters/firewall"
	"github.com/sandgate/sandgate/core/gatewire"
)

const timeout = 3 * time.Second

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "fwcheck:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: fwcheck install, dial, resolve, loopback or serve")
	}
	switch cmd, rest := args[0], args[1:]; {
	case cmd == "install" && len(rest) == 1:
		return install(rest[0])
	case cmd == "dial" && len(rest) == 1:
		return dial(rest[0])
	case cmd == "resolve" && len(rest) == 3:
		return resolve(rest[0], rest[1], rest[2])
	case cmd == "loopback" && len(rest) == 1:
		return loopback(rest[0])
	case cmd == "serve" && len(rest) == 1:
		return serve(rest[0])
	}
	return fmt.Errorf("bad arguments %q", args)
}

func install(uid string) error {
	n, err := strconv.ParseUint(uid, 10, 32)
	if err != nil {
		return fmt.Errorf("uid: %w", err)
	}
	v4, v6, err := firewall.Open()
	if err != nil {
		return err
	}
	rules := firewall.Rules{GateUID: uint32(n)}
	if err := firewall.Install(rules, v4, v6); err != nil {
		return err
	}
	if err := firewall.Verify(rules, v4, v6); err != nil {
		return err
	}
	for name, t := range map[string]firewall.Table{"ipv4": v4, "ipv6": v6} {
		if t == nil {
			fmt.Println(name, "off")
			continue
		}
		for _, chain := range []string{gatewire.Chain, "OUTPUT"} {
			lines, err := t.List("filter", chain)
			if err != nil {
				return err
			}
			for _, l := range lines {
				fmt.Println(name, l)
			}
		}
	}
	return nil
}

func dial(addr string) error {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	fmt.Println("connected", c.RemoteAddr())
	return c.Close()
}

func resolve(transport, server, name string) error {
	r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, transport, server)
	}}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	addrs, err := r.LookupHost(ctx, name)
	if err != nil {
		return err
	}
	fmt.Println("resolved", addrs)
	return nil
}

func loopback(ip string) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return err
	}
	defer func() { _ = ln.Close() }()
	accepted := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, err = c.Write([]byte("ok"))
			_ = c.Close()
		}
		accepted <- err
	}()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), timeout)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(timeout))
	buf := make([]byte, 2)
	if _, err := c.Read(buf); err != nil {
		return err
	}
	if err := <-accepted; err != nil {
		return err
	}
	fmt.Println("loopback", ln.Addr(), string(buf))
	return nil
}

func serve(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Println("listening", ln.Addr())
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		_ = c.Close()
	}
}
