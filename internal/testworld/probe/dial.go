package main

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// dialTimeout bounds every attempt: a refused dial answers at once, a
// dropped one must not hang the test.
const dialTimeout = 3 * time.Second

// runTCP dials ADDR and reports "connected" or the error.
func runTCP(args []string) (bool, error) {
	if len(args) != 1 {
		return false, usageError("tcp HOST:PORT")
	}
	c, err := net.DialTimeout("tcp", args[0], dialTimeout)
	if err != nil {
		return false, err
	}
	_ = c.Close()
	fmt.Println("connected")
	return true, nil
}

// runUDP sends a datagram to ADDR and waits for the echo.
func runUDP(args []string) (bool, error) {
	if len(args) != 1 {
		return false, usageError("udp HOST:PORT")
	}
	c, err := net.DialTimeout("udp", args[0], dialTimeout)
	if err != nil {
		return false, err
	}
	defer func() { _ = c.Close() }()
	if err := c.SetDeadline(time.Now().Add(dialTimeout)); err != nil {
		return false, err
	}
	if _, err := c.Write([]byte("probe-udp")); err != nil {
		return false, err
	}
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	if err != nil {
		return false, err
	}
	fmt.Printf("reply: %s\n", buf[:n])
	return true, nil
}

// runDNS asks SERVER for NAME's A record over udp (default) or tcp.
func runDNS(args []string) (bool, error) {
	if len(args) != 3 || (args[0] != "udp" && args[0] != "tcp") {
		return false, usageError("dns udp|tcp SERVER:PORT NAME")
	}
	proto, server, name := args[0], args[1], args[2]
	q, err := dnsQuery(0x5347, name)
	if err != nil {
		return false, err
	}
	c, err := net.DialTimeout(proto, server, dialTimeout)
	if err != nil {
		return false, err
	}
	defer func() { _ = c.Close() }()
	if err := c.SetDeadline(time.Now().Add(dialTimeout)); err != nil {
		return false, err
	}
	var resp []byte
	if proto == "tcp" {
		resp, err = dnsExchangeTCP(c, q)
	} else {
		resp, err = dnsExchangeUDP(c, q)
	}
	if err != nil {
		return false, err
	}
	ip, err := dnsAnswerA(resp, 0x5347)
	if err != nil {
		return false, err
	}
	fmt.Println("answer:", ip)
	return true, nil
}

func dnsExchangeUDP(c net.Conn, q []byte) ([]byte, error) {
	if _, err := c.Write(q); err != nil {
		return nil, err
	}
	buf := make([]byte, 1500)
	n, err := c.Read(buf)
	return buf[:n], err
}

func dnsExchangeTCP(c net.Conn, q []byte) ([]byte, error) {
	if err := writeFramed(c, q); err != nil {
		return nil, err
	}
	return readFramed(c)
}

// errShort is a DNS message too short for what it claims.
var errShort = errors.New("dns: short message")

func writeFramed(c net.Conn, msg []byte) error {
	if len(msg) > 0xffff {
		return fmt.Errorf("dns: message of %d bytes", len(msg))
	}
	_, err := c.Write(append([]byte{byte(len(msg) >> 8), byte(len(msg))}, msg...))
	return err
}

func readFramed(c net.Conn) ([]byte, error) {
	var hdr [2]byte
	if _, err := readFull(c, hdr[:]); err != nil {
		return nil, err
	}
	msg := make([]byte, int(hdr[0])<<8|int(hdr[1]))
	_, err := readFull(c, msg)
	return msg, err
}

func readFull(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
