/* `load STORE`: placeholder until written. */
package oracle;

public final class Load {
    private Load() {
    }

    public static int run(String root) {
        return 2;
    }
}
