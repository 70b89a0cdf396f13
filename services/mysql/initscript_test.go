package mysql

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxer/sandboxer/state"
)

func TestNativePasswordHash(t *testing.T) {
	// PASSWORD('password') in MariaDB and MySQL 5.7.
	if got, want := NativePasswordHash("password"), "*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19"; got != want {
		t.Errorf("NativePasswordHash = %s, want %s", got, want)
	}
}

func TestInitScript(t *testing.T) {
	c := state.Credentials{User: "app", Password: "app-pw", Database: "my_db", AdminUser: AdminUser, AdminPassword: "admin-pw"}
	got := string(InitScript(c, []string{"archive", "not-allowed"}))
	if strings.Contains(got, "app-pw") || strings.Contains(got, "admin-pw") {
		t.Error("init script holds a clear-text password")
	}
	for _, want := range []string{
		"CREATE USER 'app'@'%' IDENTIFIED VIA mysql_native_password USING '" + NativePasswordHash("app-pw") + "';",
		"GRANT " + AppPrivileges + " ON `my\\_db`.* TO 'app'@'%';",
		"GRANT " + AppPrivileges + " ON `my\\_db\\_%`.* TO 'app'@'%';",
		"GRANT " + AppPrivileges + " ON `test\\_my\\_db`.* TO 'app'@'%';",
		"INSTALL SONAME 'ha_archive';",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("init script lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "not-allowed") || strings.Contains(got, "GRANT OPTION") {
		t.Errorf("init script:\n%s", got)
	}
	// Global privileges only for the server's own OS account, by socket.
	for _, line := range strings.Split(got, "\n") {
		if strings.Contains(line, " ON *.*") && line != "GRANT ALL PRIVILEGES ON *.* TO 'mysql'@'localhost';" {
			t.Errorf("a global grant: %s", line)
		}
	}
	if !strings.Contains(got, "CREATE OR REPLACE USER 'mysql'@'localhost' IDENTIFIED VIA unix_socket;") {
		t.Errorf("the server's OS account cannot log in by the socket:\n%s", got)
	}
}

func TestQuoting(t *testing.T) {
	if got, want := QuoteString("a'b\\c\x00"), `'a\'b\\c\0'`; got != want {
		t.Errorf("QuoteString = %s, want %s", got, want)
	}
	if got, want := QuoteIdent("a`b"), "`a``b`"; got != want {
		t.Errorf("QuoteIdent = %s, want %s", got, want)
	}
}

func TestDefinerFilter(t *testing.T) {
	in := "/*!50003 CREATE*/ /*!50017 DEFINER=`app`@`%`*/ /*!50003 TRIGGER t BEFORE INSERT ON x FOR EACH ROW SET NEW.a = 1 */;;\n" +
		"CREATE DEFINER=`a``b`@`%` PROCEDURE `p`()\n" +
		"/*!50013 DEFINER=`app`@`%` SQL SECURITY DEFINER */\n" +
		"/*!50106 CREATE*/ /*!50117 DEFINER=`app`@`%`*/ /*!50106 EVENT `e` ON SCHEDULE EVERY 1 DAY DO SELECT 1 */ ;;\n" +
		"INSERT INTO `t` VALUES\n" +
		"(1,'DEFINER=`x`@`y`'),\n" +
		"(2,'CREATE DEFINER=`x`@`y`');" // no newline at the end
	want := "/*!50003 CREATE*/ /*!50017 */ /*!50003 TRIGGER t BEFORE INSERT ON x FOR EACH ROW SET NEW.a = 1 */;;\n" +
		"CREATE PROCEDURE `p`()\n" +
		"/*!50013 SQL SECURITY DEFINER */\n" +
		"/*!50106 CREATE*/ /*!50117 */ /*!50106 EVENT `e` ON SCHEDULE EVERY 1 DAY DO SELECT 1 */ ;;\n" +
		"INSERT INTO `t` VALUES\n" +
		"(1,'DEFINER=`x`@`y`'),\n" +
		"(2,'CREATE DEFINER=`x`@`y`');"
	var out bytes.Buffer
	f := &definerFilter{w: bufio.NewWriter(&out)}
	for _, chunk := range []string{in[:7], in[7:100], in[100:]} { // lines split across writes
		if _, err := f.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("filtered dump (-want +got):\n%s", diff)
	}
}

func TestURL(t *testing.T) {
	c := state.Credentials{User: "app", Password: "p@ss/word", Database: "db_1"}
	if got, want := URL(c, "127.0.0.1", 3306), "mysql://app:p%40ss%2Fword@127.0.0.1:3306/db_1"; got != want {
		t.Errorf("URL = %s, want %s", got, want)
	}
	c.CA, c.CAFile = "PEM", "/tmp/ca dir/ca.pem"
	if got, want := URL(c, "localhost", 1), "mysql://app:p%40ss%2Fword@localhost:1/db_1?ssl-mode=VERIFY_IDENTITY&ssl-ca=/tmp/ca%20dir/ca.pem"; got != want {
		t.Errorf("TLS URL = %s, want %s", got, want)
	}
}
