package ansible

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"path"
	"strings"
	"sync"

	"al.essio.dev/pkg/shellescape"
	"golang.org/x/crypto/ssh"
)

// How the ssh connection plugin reaches a host (lib/ansible/plugins/
// connection/ssh.py, v2.14.17 and v2.16.12): it runs `sshpass -d FD ssh
// ARGS` with a password, `ssh ARGS` without, where ARGS are, in order,
// ssh_args (ansible_ssh_args, ANSIBLE_SSH_ARGS, [ssh_connection]
// ssh_args; default "-C -o ControlMaster=auto -o ControlPersist=60s"),
// "-o StrictHostKeyChecking=no" when host_key_checking is false, the
// authentication options, User, ConnectTimeout, then ssh_common_args
// (ansible_ssh_common_args) and ssh_extra_args. OpenSSH keeps the first
// value of an option given several times (ssh_config(5): "the first
// obtained value will be used"; `ssh -G -o UserKnownHostsFile=/dev/null
// -o UserKnownHostsFile=/x` prints /dev/null), so ssh_common_args cannot
// override what ssh_args or host_key_checking already set. The simulation
// computes the options so, dials the host through the cloud's network
// with a real SSH client, and judges the host key as OpenSSH 8.9 does.

// hostConn is an open connection to one inventory host.
type hostConn struct {
	client     *ssh.Client
	become     bool
	becomePass string
}

// connError is a connection failure: unreachable (ssh exited 255,
// AnsibleConnectionFailure) or failed (another AnsibleError).
type connError struct {
	msg         string
	unreachable bool
}

func (e *connError) Error() string { return e.msg }

// sshOptions are the -o options in force, first value wins, keys in lower
// case.
type sshOptions map[string]string

func (o sshOptions) add(args string) {
	f := strings.Fields(args)
	for i := 0; i < len(f); i++ {
		var kv string
		switch {
		case f[i] == "-o" && i+1 < len(f):
			i++
			kv = f[i]
		case strings.HasPrefix(f[i], "-o"):
			kv = f[i][2:]
		default:
			continue
		}
		kv = strings.Trim(kv, `"'`)
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			k, v, _ = strings.Cut(kv, " ")
		}
		k = strings.ToLower(strings.TrimSpace(k))
		if _, set := o[k]; !set {
			o[k] = strings.Trim(strings.TrimSpace(v), `"'`)
		}
	}
}

// connect opens the SSH connection to host as the ssh connection plugin
// would, from the Ansible server process p.
func (r *run) connect(ctx context.Context, host string) (*hostConn, error) {
	if c := r.conns[host]; c != nil {
		return c, nil
	}
	vars := r.hostVars(host)
	if f := r.faults(); f != nil && f.unreachable(host) {
		addr := firstNonEmpty(str(vars, "ansible_host"), str(vars, "ansible_ssh_host"), host)
		return nil, &connError{fmt.Sprintf("Failed to connect to the host via ssh: ssh: connect to host %s port 22: Connection timed out", addr), true}
	}
	addr := firstNonEmpty(str(vars, "ansible_host"), str(vars, "ansible_ssh_host"), host)
	port := firstNonEmpty(str(vars, "ansible_port"), str(vars, "ansible_ssh_port"), "22")
	user := firstNonEmpty(str(vars, "ansible_user"), str(vars, "ansible_ssh_user"), r.cfg.get([]string{"ANSIBLE_REMOTE_USER"}, [][2]string{{"defaults", "remote_user"}}, ""), r.p.User)
	password := firstNonEmpty(str(vars, "ansible_password"), str(vars, "ansible_ssh_pass"), str(vars, "ansible_ssh_password"))
	hkc := r.cfg.hostKeyChecking()
	for _, k := range []string{"ansible_host_key_checking", "ansible_ssh_host_key_checking"} {
		if v, ok := vars[k]; ok {
			hkc = boolean(fmt.Sprint(v))
		}
	}
	opts := sshOptions{}
	sshArgs := r.cfg.sshArgs()
	if v, ok := vars["ansible_ssh_args"]; ok {
		sshArgs = fmt.Sprint(v)
	}
	opts.add(sshArgs)
	if !hkc {
		opts.add("-o StrictHostKeyChecking=no")
	}
	opts.add(r.cfg.get([]string{"ANSIBLE_SSH_COMMON_ARGS"}, [][2]string{{"ssh_connection", "ssh_common_args"}}, ""))
	opts.add(str(vars, "ansible_ssh_common_args"))
	opts.add(str(vars, "ansible_ssh_extra_args"))

	var auth []ssh.AuthMethod
	if password != "" {
		// _build_command: "to use the 'ssh' connection type with
		// passwords or pkcs11_provider, you must install the sshpass
		// program" (an AnsibleError: the task fails).
		if !r.onPath("sshpass") {
			return nil, &connError{msg: "to use the 'ssh' connection type with passwords or pkcs11_provider, you must install the sshpass program"}
		}
		auth = append(auth, ssh.Password(password))
	} else {
		keys := r.identities(str(vars, "ansible_ssh_private_key_file"))
		if len(keys) > 0 {
			auth = append(auth, ssh.PublicKeys(keys...))
		}
	}
	strict := strings.ToLower(firstNonEmpty(opts["stricthostkeychecking"], "ask"))
	known := firstNonEmpty(opts["userknownhostsfile"], "~/.ssh/known_hosts ~/.ssh/known_hosts2")
	khHost := addr
	if port != "22" {
		khHost = "[" + addr + "]:" + port
	}
	var hostKeyErr *connError
	cb := func(_ string, _ net.Addr, key ssh.PublicKey) error {
		hostKeyErr = r.checkHostKey(khHost, key, strict, known, password != "", hkc)
		if hostKeyErr != nil {
			return hostKeyErr
		}
		return nil
	}
	conn, err := r.env.Dial(ctx, "tcp", net.JoinHostPort(addr, port))
	if err != nil {
		reason := "Connection refused"
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			reason = "Connection timed out"
		}
		return nil, &connError{fmt.Sprintf("Failed to connect to the host via ssh: ssh: connect to host %s port %s: %s", addr, port, reason), true}
	}
	c, chans, reqs, err := ssh.NewClientConn(conn, net.JoinHostPort(addr, port), &ssh.ClientConfig{User: user, Auth: auth, HostKeyCallback: cb})
	if err != nil {
		conn.Close()
		if hostKeyErr != nil {
			return nil, hostKeyErr
		}
		if password != "" {
			// sshpass exits 5 on a rejected password; _handle_error
			// raises AnsibleAuthenticationFailure (unreachable) without
			// retrying ("Invalid/incorrect password:" when no retries
			// remain: reconnection_retries defaults to 0).
			return nil, &connError{"Invalid/incorrect password: Permission denied, please try again.", true}
		}
		return nil, &connError{fmt.Sprintf("Failed to connect to the host via ssh: %s@%s: Permission denied (publickey,password).", user, addr), true}
	}
	hc := &hostConn{client: ssh.NewClient(c, chans, reqs)}
	hc.becomePass = firstNonEmpty(str(vars, "ansible_become_password"), str(vars, "ansible_become_pass"), str(vars, "ansible_sudo_pass"))
	r.conns[host] = hc
	return hc, nil
}

// checkHostKey judges the host key as OpenSSH's
// check_host_key (sshconnect.c) does, with the known_hosts files of
// UserKnownHostsFile (space-separated, ~ expanded, on the Ansible
// server) and /etc/ssh/ssh_known_hosts.
func (r *run) checkHostKey(khHost string, key ssh.PublicKey, strict, files string, password, hkc bool) *connError {
	typ := keyTypeName(key.Type())
	var userFiles []string
	for _, f := range strings.Fields(files) {
		userFiles = append(userFiles, expandHome(f, homeOf(r.p)))
	}
	all := append(append([]string(nil), userFiles...), "/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2")
	found, changed := false, ""
	for _, f := range all {
		if f == "/dev/null" {
			continue
		}
		data, err := r.p.FS.ReadFile(f)
		if err != nil {
			continue
		}
		for n, ln := range strings.Split(string(data), "\n") {
			ln = strings.TrimSpace(ln)
			if ln == "" || strings.HasPrefix(ln, "#") {
				continue
			}
			_, hosts, pub, _, _, err := ssh.ParseKnownHosts([]byte(ln))
			if err != nil || !matchesKnownHost(hosts, khHost) || pub.Type() != key.Type() {
				continue
			}
			if bytes.Equal(pub.Marshal(), key.Marshal()) {
				found = true
			} else if changed == "" {
				changed = fmt.Sprintf("%s:%d", f, n+1)
			}
		}
	}
	fail := func(lines ...string) *connError {
		return &connError{"Failed to connect to the host via ssh: " + strings.Join(lines, "\r\n"), true}
	}
	switch {
	case found:
		return nil
	case changed != "":
		if strict == "no" || strict == "off" {
			// OpenSSH goes on but disables password and keyboard-
			// interactive authentication against a changed key.
			return fail("Password authentication is disabled to avoid man-in-the-middle attacks.", "Keyboard-interactive authentication is disabled to avoid man-in-the-middle attacks.", "Permission denied (publickey,password).")
		}
		file := changed[:strings.LastIndexByte(changed, ':')]
		return fail("@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@",
			"@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @",
			"@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@",
			"IT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!",
			"Someone could be eavesdropping on you right now (man-in-the-middle attack)!",
			"It is also possible that a host key has just been changed.",
			"The fingerprint for the "+typ+" key sent by the remote host is",
			ssh.FingerprintSHA256(key)+".",
			"Please contact your system administrator.",
			"Add correct host key in "+file+" to get rid of this message.",
			"Offending "+typ+" key in "+changed,
			"Host key for "+khHost+" has changed and you have requested strict checking.",
			"Host key verification failed.")
	}
	switch strict {
	case "yes", "true":
		return fail("No "+typ+" host key is known for "+khHost+" and you have requested strict checking.", "Host key verification failed.")
	case "no", "off", "false", "accept-new":
		// "Warning: Permanently added 'HOST' (TYPE) to the list of known
		// hosts." — written to the first UserKnownHostsFile.
		if len(userFiles) > 0 && userFiles[0] != "/dev/null" {
			line := khHost + " " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key))) + "\n"
			old, _ := r.p.FS.ReadFile(userFiles[0])
			_ = r.p.FS.MkdirAll(path.Dir(userFiles[0]), 0o700)
			_ = r.p.FS.WriteFile(userFiles[0], append(old, line...), 0o600)
		}
		return nil
	}
	// ask: no terminal to ask on.
	if password && hkc {
		// sshpass exits 6 ("Host public key is unknown") and ssh.py
		// _run raises this AnsibleError when host_key_checking is on.
		return &connError{msg: "Using a SSH password instead of a key is not possible because Host Key checking is enabled and sshpass does not support this.  Please add this host's fingerprint to your known_hosts file to manage this host."}
	}
	return fail("Host key verification failed.")
}

// matchesKnownHost reports whether a known_hosts host list names h
// (plain names, '*' and '?' wildcards, "!" negations; hashed entries are
// not modelled).
func matchesKnownHost(hosts []string, h string) bool {
	ok := false
	for _, p := range hosts {
		neg := strings.HasPrefix(p, "!")
		p = strings.TrimPrefix(p, "!")
		if m, _ := path.Match(p, h); m || p == h {
			if neg {
				return false
			}
			ok = true
		}
	}
	return ok
}

// keyTypeName is OpenSSH's sshkey_type() name of a key type.
func keyTypeName(t string) string {
	switch {
	case strings.Contains(t, "ed25519"):
		return "ED25519"
	case strings.Contains(t, "ecdsa"):
		return "ECDSA"
	case strings.Contains(t, "rsa"):
		return "RSA"
	}
	return strings.ToUpper(t)
}

// identities are the private keys ssh would offer: the given
// private_key_file, else ~/.ssh/id_rsa, id_ecdsa and id_ed25519 of the
// user running ansible-playbook. Unreadable or encrypted keys are
// skipped.
func (r *run) identities(file string) []ssh.Signer {
	home := homeOf(r.p)
	files := []string{path.Join(home, ".ssh/id_rsa"), path.Join(home, ".ssh/id_ecdsa"), path.Join(home, ".ssh/id_ed25519")}
	if file != "" {
		files = []string{expandHome(file, home)}
	}
	var out []ssh.Signer
	for _, f := range files {
		data, err := r.p.FS.ReadFile(f)
		if err != nil {
			continue
		}
		s, err := ssh.ParsePrivateKey(data)
		if err != nil {
			continue
		}
		out = append(out, s)
	}
	return out
}

// onPath reports whether a program is on the Ansible server's PATH.
func (r *run) onPath(name string) bool {
	pathEnv := firstNonEmpty(r.p.Getenv("PATH"), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	for _, d := range strings.Split(pathEnv, ":") {
		if fi, err := r.p.FS.Stat(path.Join(d, name)); err == nil && !fi.IsDir() && fi.Mode().Perm()&0o111 != 0 {
			return true
		}
	}
	return false
}

// cmdResult is a remote command's outcome.
type cmdResult struct {
	stdout, stderr string
	rc             int
}

// exec runs a shell command on the host as the play's become user (root)
// the way the sudo become plugin wraps it (lib/ansible/plugins/become/
// sudo.py): `sudo -H -S -n -u root /bin/sh -c 'echo BECOME-SUCCESS-KEY ;
// CMD'`, or with a become password `sudo -H -S -p "[sudo via ansible,
// key=KEY] password:" -u root ...`. As the ssh connection's _run does,
// the password is written only when sudo shows that prompt (a
// passwordless sudo never reads it), and the command's input only once
// the prompt is answered or BECOME-SUCCESS is seen. Without become the
// command runs as the login user.
func (hc *hostConn) exec(ctx context.Context, cmd string, stdin []byte) (cmdResult, error) {
	sess, err := hc.client.NewSession()
	if err != nil {
		return cmdResult{}, &connError{"Failed to connect to the host via ssh: " + err.Error(), true}
	}
	defer sess.Close()
	key := randomKey()
	success := "BECOME-SUCCESS-" + key
	prompt := "[sudo via ansible, key=" + key + "] password:"
	full := "/bin/sh -c " + shellescape.Quote(cmd)
	if hc.become {
		inner := "/bin/sh -c " + shellescape.Quote("echo "+success+" ; "+cmd)
		if hc.becomePass != "" {
			full = "sudo -H -S -p " + shellescape.Quote(prompt) + " -u root " + inner
		} else {
			full = "sudo -H -S -n -u root " + inner
		}
	}
	in, err := sess.StdinPipe()
	if err != nil {
		return cmdResult{}, err
	}
	out := &watchBuffer{}
	errb := &watchBuffer{}
	out.init()
	errb.init()
	sess.Stdout, sess.Stderr = out, errb
	if err := sess.Start(full); err != nil {
		return cmdResult{}, &connError{"Failed to connect to the host via ssh: " + err.Error(), true}
	}
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	feed := func() {
		if len(stdin) > 0 {
			_, _ = in.Write(stdin)
		}
		in.Close()
	}
	if !hc.become {
		feed()
	} else {
		// Wait for the prompt or the success marker (or the end).
		fed, answered := false, false
		for !fed {
			select {
			case <-ctx.Done():
				_ = sess.Signal(ssh.SIGTERM)
				sess.Close()
				<-done
				return cmdResult{}, ctx.Err()
			case err = <-done:
				done <- err
				fed = true
				in.Close()
			case <-out.changed:
			case <-errb.changed:
			}
			if fed {
				break
			}
			if hc.becomePass != "" && strings.Contains(errb.String(), prompt) {
				errb.forget(prompt)
				if answered {
					// Asked again: the password was wrong; sudo gets
					// end of input and gives up.
					in.Close()
					fed = true
					continue
				}
				_, _ = in.Write([]byte(hc.becomePass + "\n"))
				answered = true
			}
			if strings.Contains(out.String(), success+"\n") {
				feed()
				fed = true
			}
		}
	}
	select {
	case <-ctx.Done():
		_ = sess.Signal(ssh.SIGTERM)
		sess.Close()
		<-done
		return cmdResult{}, ctx.Err()
	case err = <-done:
	}
	rc := 0
	var ee *ssh.ExitError
	switch {
	case errors.As(err, &ee):
		rc = ee.ExitStatus()
	case err != nil && !errors.Is(err, io.EOF):
		return cmdResult{}, &connError{"Failed to connect to the host via ssh: " + err.Error(), true}
	}
	stdout := out.String()
	if hc.become {
		if i := strings.Index(stdout, success+"\n"); i >= 0 {
			stdout = stdout[i+len(success)+1:]
		} else if strings.Contains(errb.String(), "a password is required") {
			// become.py: "Missing sudo password" (a failed task).
			return cmdResult{}, &connError{msg: "Missing sudo password"}
		} else if strings.Contains(errb.String(), "incorrect password attempt") {
			return cmdResult{}, &connError{msg: "Incorrect sudo password"}
		}
	}
	return cmdResult{stdout: stdout, stderr: errb.String(), rc: rc}, nil
}

// watchBuffer collects a stream and signals each write.
type watchBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
	once    sync.Once
}

func (w *watchBuffer) init() { w.once.Do(func() { w.changed = make(chan struct{}, 1) }) }

func (w *watchBuffer) Write(p []byte) (int, error) {
	w.init()
	w.mu.Lock()
	n, err := w.b.Write(p)
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
	return n, err
}

func (w *watchBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// forget removes the first occurrence of s (a prompt already answered).
func (w *watchBuffer) forget(s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := strings.Replace(w.b.String(), s, "", 1)
	w.b.Reset()
	w.b.WriteString(t)
}

func (hc *hostConn) close() {
	if hc.client != nil {
		hc.client.Close()
	}
}

func randomKey() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
